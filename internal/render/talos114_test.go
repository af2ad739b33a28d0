package render_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

// talosKnownKinds is a corpus config without the documents of kinds
// talosbox does not implement yet (TestTalosStabilityConfigs takes them
// whole): what talosbox makes of the rest.
func talosKnownKinds(t *testing.T, file string) []byte {
	t.Helper()

	data, err := os.ReadFile("../../configs/testdata/talos/stability/" + file)
	if err != nil {
		t.Fatal(err)
	}

	docs := strings.Split(string(data), "\n---\n")

	return []byte(strings.Join(slices.DeleteFunc(docs, func(d string) bool {
		for _, l := range strings.Split(d, "\n") {
			if kind, ok := strings.CutPrefix(l, "kind: "); ok {
				_, known := configs.KindNamed(kind)

				return !known
			}
		}

		return false
	}), "\n---\n"))
}

// TestRenderTalos114: Talos 1.14's Kubernetes documents render what the
// node runs: the API server with the structured authentication config
// and the documents' authorizers, service account issuer and probes; the
// kubelet without a manifests directory; kube-proxy, flannel and CoreDNS.
// No key of the documents is in a redacted render.
func TestRenderTalos114(t *testing.T) {
	files, err := filepath.Glob("../../configs/testdata/talos/stability/v1.1[45]/*.yaml")
	if err != nil || len(files) != 8 {
		t.Fatalf("corpus: %v %v", files, err)
	}

	for _, name := range files {
		name = strings.TrimPrefix(name, "../../configs/testdata/talos/stability/")

		t.Run(name, func(t *testing.T) {
			data := talosKnownKinds(t, name)

			cfg, _, err := render.Load(data, configs.ModeContainer)
			if err != nil {
				t.Fatal(err)
			}

			roundTrip(t, cfg)

			arts := mustRender(t, cfg, render.Options{Mode: configs.ModeContainer, Hostname: "node-1"})

			if !cfg.IsControlPlane() {
				if _, ok := arts.Get("static-pods/kube-apiserver.yaml"); ok {
					t.Error("a worker renders an API server")
				}

				return
			}

			api := file(t, arts, "static-pods/kube-apiserver.yaml")
			for _, want := range []string{"--authentication-config=", "--service-account-issuer=https://base:6443", "startupProbe:", "readinessProbe:"} {
				if !strings.Contains(api, want) {
					t.Errorf("kube-apiserver lacks %s", want)
				}
			}

			if strings.Contains(api, "--anonymous-auth") {
				t.Error("kube-apiserver has --anonymous-auth next to its authentication config")
			}

			if got := file(t, arts, "fs/system/config/kubernetes/kube-apiserver/authentication-config.yaml"); !strings.Contains(got, "kind: AuthenticationConfiguration") ||
				!strings.Contains(got, "path: /livez") {
				t.Errorf("authentication config:\n%s", got)
			}

			if got := file(t, arts, "fs/etc/kubernetes/kubelet.yaml"); strings.Contains(got, "staticPodPath") || !strings.Contains(got, "seccompDefault: true") {
				t.Errorf("kubelet config:\n%s", got)
			}

			for _, a := range arts.List {
				for _, secret := range []string{"PRIVATE KEY", "45yd2Ke+sytiICojDf8aibTfgt99nzJmO53cjDqrCto="} {
					if strings.Contains(string(a.Data), secret) {
						t.Errorf("%s holds %q", a.Path, secret)
					}
				}
			}
		})
	}
}
