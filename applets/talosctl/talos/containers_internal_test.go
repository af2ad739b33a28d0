package talos

import (
	"strings"
	"testing"
)

func TestWriteContainerTable(t *testing.T) {
	const header = "NODE\tNAMESPACE\tID\tIMAGE\tPID\tSTATUS"

	row := func(node, pod, id, image, pid, status string) containerRow {
		return containerRow{node: node, namespace: "k8s.io", pod: pod, id: id, rest: []string{image, pid, status}}
	}

	const (
		api = "kube-system/kube-apiserver-talos-default-master-1"
		cm  = "kube-system/kube-controller-manager-talos-default-master-1"
		web = "default/web"
		// A pod whose name extends another's: its rows must not come
		// between the other pod and its containers.
		web2 = "default/web-2"
	)

	tests := []struct {
		name string
		rows []containerRow
		want string
	}{
		{
			name: "the troubleshooting guide's -k listing",
			rows: []containerRow{
				row("172.20.0.2", cm, cm+":kube-controller-manager", "k8s.gcr.io/kube-controller-manager:v1.20.4", "2580", "CONTAINER_RUNNING"),
				row("172.20.0.2", api, api+":kube-apiserver", "k8s.gcr.io/kube-apiserver:v1.20.4", "2572", "CONTAINER_RUNNING"),
				row("172.20.0.2", cm, cm, "k8s.gcr.io/pause:3.2", "2547", "SANDBOX_READY"),
				row("172.20.0.2", api, api, "k8s.gcr.io/pause:3.2", "2539", "SANDBOX_READY"),
			},
			want: `
NODE         NAMESPACE   ID                                                                                      IMAGE                                        PID    STATUS
172.20.0.2   k8s.io      kube-system/kube-apiserver-talos-default-master-1                                       k8s.gcr.io/pause:3.2                         2539   SANDBOX_READY
172.20.0.2   k8s.io      └─ kube-system/kube-apiserver-talos-default-master-1:kube-apiserver                     k8s.gcr.io/kube-apiserver:v1.20.4            2572   CONTAINER_RUNNING
172.20.0.2   k8s.io      kube-system/kube-controller-manager-talos-default-master-1                              k8s.gcr.io/pause:3.2                         2547   SANDBOX_READY
172.20.0.2   k8s.io      └─ kube-system/kube-controller-manager-talos-default-master-1:kube-controller-manager   k8s.gcr.io/kube-controller-manager:v1.20.4   2580   CONTAINER_RUNNING
`,
		},
		{
			name: "pods by name, nodes in the order given",
			rows: []containerRow{
				row("n2", web, web, "pause", "1", "SANDBOX_READY"),
				row("n1", web2, web2+":app", "app", "0", "CONTAINER_EXITED"),
				row("n1", web, web+":app", "app", "3", "CONTAINER_RUNNING"),
				row("n1", web2, web2, "pause", "2", "SANDBOX_NOTREADY"),
				row("n1", web, web, "pause", "4", "SANDBOX_READY"),
			},
			want: `
NODE   NAMESPACE   ID                     IMAGE   PID   STATUS
n2     k8s.io      default/web            pause   1     SANDBOX_READY
n1     k8s.io      default/web            pause   4     SANDBOX_READY
n1     k8s.io      └─ default/web:app     app     3     CONTAINER_RUNNING
n1     k8s.io      default/web-2          pause   2     SANDBOX_NOTREADY
n1     k8s.io      └─ default/web-2:app   app     0     CONTAINER_EXITED
`,
		},
		{
			name: "no containers",
			want: "\nNODE   NAMESPACE   ID   IMAGE   PID   STATUS\n",
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sb strings.Builder
			if err := writeContainerTable(&sb, header, tt.rows); err != nil {
				t.Fatal(err)
			}

			if want := strings.TrimPrefix(tt.want, "\n"); sb.String() != want {
				t.Errorf("got:\n%s\nwant:\n%s", sb.String(), want)
			}
		})
	}
}
