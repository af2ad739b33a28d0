package containers

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/containerd/containerd/v2/pkg/oci"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/talosbox/talosbox/internal/containers/containerdtest"
)

// TestListCRILabelled lists, over the containerd API, containers laid
// out as the CRI lays them out: a sandbox and its containers, named from
// their labels, grouped by pod, and their images by name. None has a
// task, so all read as stopped.
func TestListCRILabelled(t *testing.T) {
	sock := containerdtest.Start(t, containerdtest.Options{})
	c := containerdtest.Connect(t, sock)
	ctx := namespaces.WithNamespace(t.Context(), K8sNamespace)

	manifest := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("manifest"), Size: 100}
	for _, name := range []string{"registry.k8s.io/kube-apiserver:v1.34.1", "registry.k8s.io/kube-apiserver@" + manifest.Digest.String(), "sha256:" + digest.FromString("config").Encoded()} {
		if _, err := c.ImageService().Create(ctx, images.Image{Name: name, Target: manifest}); err != nil {
			t.Fatal(err)
		}
	}

	pod := map[string]string{labelPodNamespace: "kube-system", labelPodName: "kube-apiserver-n1", labelPodUID: "uid-1"}
	with := func(extra map[string]string) map[string]string {
		l := map[string]string{}
		for k, v := range pod {
			l[k] = v
		}

		for k, v := range extra {
			l[k] = v
		}

		return l
	}

	for id, spec := range map[string]struct {
		labels map[string]string
		image  string
	}{
		"c0ffee": {with(map[string]string{labelKind: kindContainer, labelContainerName: "kube-apiserver"}), "sha256:" + digest.FromString("config").Encoded()},
		"5ab0x":  {with(map[string]string{labelKind: kindSandbox}), "registry.k8s.io/pause:3.10"},
		"other":  {map[string]string{"app": "not-the-cri"}, ""},
	} {
		opts := []client.NewContainerOpts{client.WithContainerLabels(spec.labels), client.WithSpec(&oci.Spec{})}
		if spec.image != "" {
			opts = append(opts, client.WithImageName(spec.image))
		}

		if _, err := c.NewContainer(ctx, id, opts...); err != nil {
			t.Fatal(err)
		}
	}

	got, err := List(t.Context(), sock, K8sNamespace)
	if err != nil {
		t.Fatal(err)
	}

	want := []Container{
		{Namespace: K8sNamespace, ID: "5ab0x", Display: "kube-system/kube-apiserver-n1", PodID: "kube-system/kube-apiserver-n1", Name: "5ab0x", UID: "uid-1", Image: "registry.k8s.io/pause:3.10", Status: StatusSandboxNotReady, Sandbox: true},
		{Namespace: K8sNamespace, ID: "c0ffee", Display: "kube-system/kube-apiserver-n1:kube-apiserver", PodID: "kube-system/kube-apiserver-n1", Name: "kube-apiserver", UID: "uid-1", Image: "registry.k8s.io/kube-apiserver:v1.34.1", Status: StatusContainerExited},
	}

	for i := range got {
		got[i].CreatedAt = want[0].CreatedAt // the daemon's clock
	}

	if !slices.Equal(got, want) {
		t.Errorf("List:\n got %+v\nwant %+v", got, want)
	}

	// The system namespace has none; a task-less non-CRI container is not listed.
	if got, err := List(t.Context(), sock, SystemNamespace); err != nil || len(got) != 0 {
		t.Errorf("List(system) = %+v, %v; want none", got, err)
	}

	stats, err := Stats(t.Context(), sock, K8sNamespace)
	if err != nil || len(stats) != 2 || stats[0].MemoryUsage != 0 {
		t.Errorf("Stats = %+v, %v; want the two, unmeasured", stats, err)
	}
}

func TestUnavailable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "none.sock")

	for name, call := range map[string]func() error{
		"List":    func() error { _, err := List(t.Context(), sock, SystemNamespace); return err },
		"ListCRI": func() error { _, err := ListCRI(t.Context(), sock); return err },
		"LogPath": func() error { _, err := LogPath(t.Context(), sock, "a/b:c"); return err },
		"Images":  func() error { _, err := Images(t.Context(), sock, K8sNamespace); return err },
		"Pull":    func() error { _, err := Pull(t.Context(), sock, K8sNamespace, "busybox", ""); return err },
	} {
		if err := call(); !errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: got %v, want ErrUnavailable", name, err)
		}
	}
}

// TestCRI asks a real CRI: nothing runs, and a container that does not
// exist is said to be not found, by the name it was asked by.
func TestCRI(t *testing.T) {
	sock := containerdtest.Start(t, containerdtest.Options{CRI: true})

	cs, err := ListCRI(t.Context(), sock)
	if err != nil || len(cs) != 0 {
		t.Fatalf("ListCRI = %+v, %v; want none", cs, err)
	}

	stats, err := StatsCRI(t.Context(), sock)
	if err != nil || len(stats) != 0 {
		t.Fatalf("StatsCRI = %+v, %v; want none", stats, err)
	}

	_, err = LogPath(t.Context(), sock, "kube-system/x:y")
	if !errors.Is(err, ErrNotFound) || err.Error() != `container "kube-system/x:y" not found` {
		t.Fatalf("LogPath = %v; want `container \"kube-system/x:y\" not found`", err)
	}

	if _, err := LogPath(t.Context(), sock, "kube-system/x"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("LogPath(pod) = %v; want ErrInvalid", err)
	}
}

// TestListRunning lists real tasks: a system service, and a pod laid out
// as the CRI does, read over the containerd API with their PIDs, states
// and usage.
func TestListRunning(t *testing.T) {
	sock := containerdtest.Start(t, containerdtest.Options{})
	c := containerdtest.Connect(t, sock)

	svcPID := containerdtest.RunSleeper(t, c, SystemNamespace, "svc", nil)

	pod := map[string]string{labelPodNamespace: "default", labelPodName: "web", labelKind: kindSandbox}
	sbPID := containerdtest.RunSleeper(t, c, K8sNamespace, "sb", pod)
	appPID := containerdtest.RunSleeper(t, c, K8sNamespace, "app", map[string]string{labelPodNamespace: "default", labelPodName: "web", labelKind: kindContainer, labelContainerName: "app"})

	tests := []struct {
		ns   string
		want []string
	}{
		{SystemNamespace, []string{fmt.Sprintf("svc svc %d RUNNING", svcPID)}},
		{K8sNamespace, []string{
			fmt.Sprintf("default/web default/web %d SANDBOX_READY", sbPID),
			fmt.Sprintf("default/web default/web:app %d CONTAINER_RUNNING", appPID),
		}},
	}

	for _, tt := range tests {
		stats, err := Stats(t.Context(), sock, tt.ns)
		if err != nil {
			t.Fatal(err)
		}

		var got []string

		for _, s := range stats {
			got = append(got, fmt.Sprintf("%s %s %d %s", s.PodID, s.Display, s.PID, s.Status))

			if s.PID == 0 || s.CPUUsage == 0 || s.MemoryUsage == 0 {
				t.Errorf("%s: no usage measured: %+v", s.Display, s)
			}
		}

		if !slices.Equal(got, tt.want) {
			t.Errorf("Stats(%s):\n got %q\nwant %q", tt.ns, got, tt.want)
		}
	}
}
