package containers

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/containerd/containerd/v2/client"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		in      string
		want    Ref
		wantErr bool
	}{
		{in: "kube-system/kube-apiserver-n1:kube-apiserver", want: Ref{Namespace: "kube-system", Pod: "kube-apiserver-n1", Container: "kube-apiserver"}},
		{in: "kube-system/coredns-abc", want: Ref{Namespace: "kube-system", Pod: "coredns-abc"}},
		{in: "default/web:app:0123456789ab", want: Ref{Namespace: "default", Pod: "web", Container: "app", IDPrefix: "0123456789ab"}},
		{in: "kubelet", wantErr: true},
		{in: "/pod:c", wantErr: true},
		{in: "ns/", wantErr: true},
		{in: "ns/pod:", wantErr: true},
		{in: "ns/pod:c:id:more", wantErr: true},
		{in: "ns/pod/x:c", wantErr: true},
	}

	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRef(tt.in)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("ParseRef(%q) = %+v, %v; want an ErrInvalid", tt.in, got, err)
				}

				return
			}

			if err != nil || got != tt.want {
				t.Fatalf("ParseRef(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
			}

			if got.String() != tt.in {
				t.Errorf("String() = %q, want %q", got.String(), tt.in)
			}
		})
	}
}

func TestSortGroupsPods(t *testing.T) {
	t0 := time.Unix(1000, 0)

	pod := func(id string) Container { return Container{ID: "sb-" + id, Display: id, PodID: id, Sandbox: true} }
	ctr := func(pod, name string, created time.Time) Container {
		return Container{ID: created.Sub(t0).String(), Display: pod + ":" + name, PodID: pod, CreatedAt: created}
	}

	cs := []Container{
		ctr("kube-system/etcd-n1", "etcd", t0),
		ctr("kube-system/kube-apiserver-n1", "kube-apiserver", t0),
		// An older attempt of the same container sorts after the newer.
		ctr("kube-system/kube-apiserver-n1", "kube-apiserver", t0.Add(time.Minute)),
		pod("kube-system/kube-apiserver-n1-2"),
		ctr("kube-system/kube-apiserver-n1-2", "x", t0),
		pod("kube-system/kube-apiserver-n1"),
		pod("kube-system/etcd-n1"),
		{ID: "apid", Display: "apid", PodID: "apid"},
	}

	Sort(cs)

	var got []string
	for _, c := range cs {
		got = append(got, c.Display+"@"+c.ID)
	}

	want := []string{
		"apid@apid",
		"kube-system/etcd-n1@sb-kube-system/etcd-n1",
		"kube-system/etcd-n1:etcd@0s",
		"kube-system/kube-apiserver-n1@sb-kube-system/kube-apiserver-n1",
		"kube-system/kube-apiserver-n1:kube-apiserver@1m0s",
		"kube-system/kube-apiserver-n1:kube-apiserver@0s",
		"kube-system/kube-apiserver-n1-2@sb-kube-system/kube-apiserver-n1-2",
		"kube-system/kube-apiserver-n1-2:x@0s",
	}

	if !slices.Equal(got, want) {
		t.Errorf("order:\n got %q\nwant %q", got, want)
	}
}

func TestCRIIdentity(t *testing.T) {
	tests := []struct {
		name                string
		labels              map[string]string
		podID, display      string
		sandbox, fromTheCRI bool
	}{
		{
			name:   "sandbox",
			labels: map[string]string{labelPodNamespace: "kube-system", labelPodName: "coredns-1", labelKind: kindSandbox},
			podID:  "kube-system/coredns-1", display: "kube-system/coredns-1", sandbox: true, fromTheCRI: true,
		},
		{
			name: "container",
			labels: map[string]string{
				labelPodNamespace: "kube-system", labelPodName: "coredns-1", labelKind: kindContainer, labelContainerName: "coredns",
			},
			podID: "kube-system/coredns-1", display: "kube-system/coredns-1:coredns", fromTheCRI: true,
		},
		{
			name:   "sandbox without a kind label",
			labels: map[string]string{labelPodNamespace: "default", labelPodName: "web"},
			podID:  "default/web", display: "default/web", sandbox: true, fromTheCRI: true,
		},
		{name: "not the CRI's", labels: map[string]string{"app": "x"}},
		{name: "no labels"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			podID, display, sandbox, ok := criIdentity(tt.labels)
			if podID != tt.podID || display != tt.display || sandbox != tt.sandbox || ok != tt.fromTheCRI {
				t.Errorf("criIdentity = %q, %q, %t, %t; want %q, %q, %t, %t", podID, display, sandbox, ok, tt.podID, tt.display, tt.sandbox, tt.fromTheCRI)
			}
		})
	}
}

func TestStatuses(t *testing.T) {
	tests := []struct {
		sandbox bool
		task    client.ProcessStatus
		want    string
	}{
		{true, client.Running, StatusSandboxReady},
		{true, client.Stopped, StatusSandboxNotReady},
		{true, "", StatusSandboxNotReady},
		{false, client.Running, StatusContainerRunning},
		{false, client.Paused, StatusContainerRunning},
		{false, client.Created, StatusContainerCreated},
		{false, client.Stopped, StatusContainerExited},
		{false, "", StatusContainerExited},
		{false, client.Unknown, StatusContainerUnknown},
	}

	for _, tt := range tests {
		if got := criStatus(tt.sandbox, tt.task); got != tt.want {
			t.Errorf("criStatus(%t, %q) = %q, want %q", tt.sandbox, tt.task, got, tt.want)
		}
	}

	for task, want := range map[client.ProcessStatus]string{client.Running: "RUNNING", client.Stopped: "STOPPED", "": "UNKNOWN"} {
		if got := taskStatus(task); got != want {
			t.Errorf("taskStatus(%q) = %q, want %q", task, got, want)
		}
	}
}

func TestImageNameChoice(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"sha256:0123", true},
		{"sha512:0123", true},
		{"registry.k8s.io/pause:3.10", false},
		{"localhost:5000/x", false},
		{"docker.io/library/busybox@sha256:0123", false},
	}

	for _, tt := range tests {
		if got := isDigestName(tt.name); got != tt.want {
			t.Errorf("isDigestName(%q) = %t, want %t", tt.name, got, tt.want)
		}
	}

	if !better("registry.k8s.io/pause:3.10", "registry.k8s.io/pause@sha256:0123") {
		t.Error("a tagged name must win over a digested one")
	}
}

func TestErrorKinds(t *testing.T) {
	err := errorf(ErrNotFound, "container %q not found", "kube-system/x:y")

	if !errors.Is(err, ErrNotFound) || errors.Is(err, ErrUnavailable) {
		t.Errorf("%v: wrong kind", err)
	}

	if err.Error() != `container "kube-system/x:y" not found` {
		t.Errorf("message %q", err.Error())
	}
}
