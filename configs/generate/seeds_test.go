package generate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// TestSeedFixturesPatchGeneratedConfig merges every config snippet from the
// seed guides, as a strategic merge patch, into a freshly generated
// control-plane config: the result must decode strictly, validate, and
// carry the patch.
// refusedSeeds are seed fixtures that today's Talos (and talosbox) refuse,
// with the error text that must point the user to the new shape.
var refusedSeeds = map[string]string{
	"containerd-metrics-file.yaml": "/etc/cri/conf.d/20-customization.part",
	// Talos v0.9's Kubernetes 1.20: today's Talos refuses versions it
	// cannot run, and a kubelet newer than its API server.
	"kubelet-image.yaml":   "machine.kubelet.image: version of Kubernetes 1.20.5 is too old: talosbox runs 1.29 to 1.34.x",
	"apiserver-image.yaml": "cluster.apiServer.image: version of Kubernetes 1.20.5 is too old: talosbox runs 1.29 to 1.34.x",
	// Since Talos 1.12 the hostname is a HostnameConfig document (auto:
	// stable in generated configs): a static machine.network.hostname
	// next to it is refused, as Talos refuses it.
	"static-addressing.yaml": "HostnameConfig: a static hostname is already set in the v1alpha1 document (machine.network.hostname)",
}

func TestSeedFixturesPatchGeneratedConfig(t *testing.T) {
	out, err := generate.Generate(generate.Options{ClusterName: "seeds", Endpoint: "https://10.5.0.1:6443"})
	if err != nil {
		t.Fatal(err)
	}

	base, err := out.ControlPlane.Encode()
	if err != nil {
		t.Fatal(err)
	}

	files, err := filepath.Glob("../testdata/seeds/*.yaml")
	if err != nil || len(files) < 15 {
		t.Fatalf("seed fixtures: %v (%d files)", err, len(files))
	}

	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			patches, err := configpatch.Load("@" + file)
			if err != nil {
				t.Fatal(err)
			}

			doc, err := configpatch.Apply(base, patches...)
			if err != nil {
				t.Fatal(err)
			}

			cfg, err := configs.Decode(doc)
			if err != nil {
				t.Fatalf("patched config does not decode: %v", err)
			}

			_, err = cfg.Validate(configs.ModeMetal)

			// Talos replaced 0.9's /var/cri/conf.d imports with
			// /etc/cri/conf.d/*.part; the old example gets an error that
			// says where its content goes now.
			if want, refused := refusedSeeds[filepath.Base(file)]; refused {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("want an error containing %q, got %v", want, err)
				}

				return
			}

			if err != nil {
				t.Fatalf("patched config is invalid: %v", err)
			}

			// The patch must have landed: the fixture, decoded on its own,
			// must differ from the base config after merging.
			if string(doc) == string(base) {
				t.Fatal("the patch changed nothing")
			}

			raw, _ := os.ReadFile(file)
			if _, err := configs.Decode(raw); err != nil {
				t.Fatalf("fixture itself does not decode: %v", err)
			}
		})
	}
}
