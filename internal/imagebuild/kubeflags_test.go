package imagebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs/kubeflags"
	"github.com/talosbox/talosbox/internal/imagestore"
)

// TestMain lets the test binary stand in for the Kubernetes binary: run
// under a component's name (argv[0]) it prints a help text as pflag
// would, so writeKubeFlags is tested without building Kubernetes. The
// component runs with an empty environment, so the test steers it with a
// file beside the executable: "suffix" is appended to the kubelet's usage,
// "fail" makes the kubelet fail.
func TestMain(m *testing.M) {
	name := filepath.Base(os.Args[0])
	if !slices.Contains(kubeflags.Components, name) {
		os.Exit(m.Run())
	}

	exe, _ := os.Executable()
	ctl, _ := os.ReadFile(filepath.Join(filepath.Dir(exe), "fake-kube"))

	switch {
	case name == kubeflags.Kubelet && string(ctl) == "fail":
		fmt.Fprintln(os.Stderr, "kubelet: broken")
		os.Exit(3)
	case name == kubeflags.Kubelet:
		fmt.Printf("The kubelet is the primary node agent.\n\nUsage:\n  kubelet [flags]\n\nFlags:\n"+
			"      --address ip                  The IP address%s\n"+
			"  -h, --help                        help for kubelet\n", ctl)
	default:
		fmt.Printf("Usage:\n  %s [flags]\n\nGeneric flags:\n\n"+
			"      --feature-gates mapStringBool   A set of key=value pairs\n"+
			"      --%s-only int                  Only here\n\n"+
			"Logs flags:\n\n  -v, --v Level                       number for the log level verbosity\n", name, name)
	}

	os.Exit(0)
}

func TestWriteKubeFlags(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	bin := filepath.Join(tmp, "kubernetes")

	if err := imagestore.LinkOrCopy(self, bin); err != nil {
		t.Fatal(err)
	}

	steer := func(ctl string) {
		if err := os.WriteFile(filepath.Join(tmp, "fake-kube"), []byte(ctl), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	dir := filepath.Join(tmp, "data")
	path := filepath.Join(dir, "v1.34.12.json")

	var log strings.Builder

	b := &builder{opts: Options{Log: &log}}
	ctx := context.Background()

	// Flags --help hides come from the binary's dump, as deprecated; one
	// --help lists too is not listed twice.
	hidden := map[string]map[string]string{kubeflags.Proxy: {"healthz-port": "int32", "v": "Level"}}

	if err := b.writeKubeFlags(ctx, "1.34.12", bin, dir, hidden); err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	version, comps, err := kubeflags.Decode(data)
	if err != nil {
		t.Fatal(err)
	}

	if version != "1.34.12" || len(comps) != len(kubeflags.Components) {
		t.Fatalf("wrote %s with %v", version, comps)
	}

	wantKubelet := []kubeflags.Flag{{Name: "address", Type: "ip"}, {Name: "help", Type: "bool"}}
	if !slices.Equal(comps[kubeflags.Kubelet], wantKubelet) {
		t.Errorf("kubelet: %+v, want %+v", comps[kubeflags.Kubelet], wantKubelet)
	}

	wantProxy := []kubeflags.Flag{{Name: "feature-gates", Type: "mapStringBool"}, {Name: "healthz-port", Type: "int32", Deprecated: true}, {Name: "kube-proxy-only", Type: "int"}, {Name: "v", Type: "Level"}}
	if !slices.Equal(comps[kubeflags.Proxy], wantProxy) {
		t.Errorf("kube-proxy: %+v, want %+v", comps[kubeflags.Proxy], wantProxy)
	}

	// A rerun with the same output leaves the file alone.
	before, _ := os.Stat(path)

	if err := b.writeKubeFlags(ctx, "1.34.12", bin, dir, hidden); err != nil {
		t.Fatal(err)
	}

	after, _ := os.Stat(path)
	if !os.SameFile(before, after) || !after.ModTime().Equal(before.ModTime()) {
		t.Error("an unchanged list was rewritten")
	}

	if !strings.Contains(log.String(), "written") || !strings.Contains(log.String(), "up to date") {
		t.Errorf("log:\n%s", log.String())
	}

	// A changed help replaces the file, and leaves no temporary file.
	steer(" (DEPRECATED: use the config file)")

	if err := b.writeKubeFlags(ctx, "1.34.12", bin, dir, hidden); err != nil {
		t.Fatal(err)
	}

	_, comps, err = kubeflags.Decode(mustRead(t, path))
	if err != nil {
		t.Fatal(err)
	}

	if f := comps[kubeflags.Kubelet][0]; !f.Deprecated {
		t.Errorf("kubelet --address after the change: %+v", f)
	}

	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in %s, want only the list", len(entries), dir)
	}

	// A component that fails says which, and what it printed; the list
	// stays as it was.
	steer("fail")

	err = b.writeKubeFlags(ctx, "1.34.12", bin, dir, hidden)
	if err == nil || !strings.Contains(err.Error(), "kubelet --help") || !strings.Contains(err.Error(), "kubelet: broken") {
		t.Errorf("a failing kubelet: %v", err)
	}

	if _, comps, err := kubeflags.Decode(mustRead(t, path)); err != nil || !comps[kubeflags.Kubelet][0].Deprecated {
		t.Errorf("the list after a failed run: %v, %v", comps, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()

	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	return b
}
