package render_test

import (
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/render"
)

// fuzzBases are the configs FuzzValidateRender changes, by the index its
// input names: gen config's two, then configs' testdata. Append only: the
// seeds under testdata/fuzz name them by index.
func fuzzBases(t testing.TB) [][]byte {
	t.Helper()

	cp, worker := gen(t)

	var out [][]byte

	for _, cfg := range []*configs.Config{cp, worker} {
		data, err := cfg.Encode()
		if err != nil {
			t.Fatal(err)
		}

		out = append(out, data)
	}

	for _, f := range []string{"minimal-controlplane.yaml", "controlplane.yaml", "worker.yaml"} {
		data, err := os.ReadFile("../../configs/testdata/full/" + f)
		if err != nil {
			t.Fatal(err)
		}

		out = append(out, data)
	}

	return out
}

// FuzzValidateRender holds validation to the renderers: a config that
// decodes and validates for a mode (configs' rules and the renderers'
// checks, as every path validates) renders for it, without a panic. The
// input picks a base config, a patch of it (YAML, as `talosctl patch mc`
// takes: the fuzzer's bytes go into the config there) and a program of
// structural changes (mutator), so that mutations reach the values the
// renderers read rather than the YAML parser. A failure is a rule the node
// enforces that validation does not know: a validation gap.
func FuzzValidateRender(f *testing.F) {
	bases := fuzzBases(f)
	c := corpus(f)

	for i := range bases {
		f.Add(uint8(i), []byte(nil), []byte(nil))
	}

	// configs' seeds and the variants here are patches.
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if strings.HasPrefix(name, "configs/testdata/seeds/") || strings.HasPrefix(name, "testdata/variants/") {
			f.Add(uint8(0), c[name], []byte(nil))
			f.Add(uint8(1), c[name], []byte(nil))
		}
	}

	f.Fuzz(func(t *testing.T, base uint8, patch, changes []byte) {
		doc := bases[int(base)%len(bases)]

		if len(patch) > 0 {
			ps, err := configpatch.Parse(patch)
			if err != nil {
				return
			}

			if doc, err = configpatch.Apply(doc, ps...); err != nil {
				return
			}
		}

		cfg, err := configs.Decode(doc)
		if err != nil {
			return
		}

		if len(changes) > 0 {
			(&mutator{b: changes}).apply(cfg)

			// As a node reads it: through its YAML.
			data, err := cfg.Encode()
			if err != nil {
				return
			}

			if cfg, err = configs.Decode(data); err != nil {
				return
			}
		}

		for _, mode := range modes {
			// The one validation (Load's): configs' rules, then the
			// renderers' checks. Rendering what it accepts must succeed.
			if _, err := cfg.Validate(mode, configs.WithChecks(render.Validate())); err != nil {
				continue
			}

			if _, err := render.Render(cfg, render.Options{Mode: mode}); err != nil {
				data, _ := cfg.Encode()

				t.Fatalf("validation accepts this config for %s mode, the renderers do not:\n%v\n%s", mode, err, data)
			}
		}
	})
}
