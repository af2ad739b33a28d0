package render_test

import (
	"maps"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/render"
)

var modes = []configs.Mode{configs.ModeMetal, configs.ModeContainer}

// corpus is every config the property test and the fuzz target start
// from, by name: configs' testdata, gen config's two, and variants that
// reach what those leave out.
func corpus(t testing.TB) map[string][]byte {
	t.Helper()

	out := map[string][]byte{}

	for _, glob := range []string{"../../configs/testdata/full/*.yaml", "../../configs/testdata/seeds/*.yaml", "testdata/variants/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}

		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}

			out[strings.TrimPrefix(f, "../../")] = data
		}
	}

	cp, worker := gen(t)

	for name, cfg := range map[string]*configs.Config{"controlplane": cp, "worker": worker} {
		data, err := cfg.Encode()
		if err != nil {
			t.Fatal(err)
		}

		out["gen/"+name+".yaml"] = data

		// configs' seeds and the variants here are parts of configs:
		// each is tried as a patch of gen config's, as an operator
		// would apply it.
		for seed, patch := range maps.Clone(out) {
			if !strings.HasPrefix(seed, "configs/testdata/seeds/") && !strings.HasPrefix(seed, "testdata/variants/") {
				continue
			}

			ps, err := configpatch.Parse(patch)
			if err != nil {
				continue
			}

			if patched, err := configpatch.Apply(data, ps...); err == nil {
				out["gen/"+name+"+"+path.Base(seed)] = patched
			}
		}
	}

	return out
}

// TestRenderAcceptedConfigs is the property: every config of the corpus
// that decodes and validates for a mode renders for that mode, and Check
// agrees. Secrets never leave a redacted render.
func TestRenderAcceptedConfigs(t *testing.T) {
	accepted := 0

	for name, data := range corpus(t) {
		cfg, err := configs.Decode(data)
		if err != nil {
			continue
		}

		for _, mode := range modes {
			if _, err := cfg.Validate(mode); err != nil {
				continue
			}

			accepted++

			t.Run(name+"/"+string(mode), func(t *testing.T) {
				arts, err := render.Render(cfg, render.Options{Mode: mode})
				if err != nil {
					t.Fatalf("validation accepts it, the renderers do not:\n%v", err)
				}

				if err := render.Check(cfg, mode); err != nil {
					t.Errorf("Render succeeds, Check says %v", err)
				}

				if len(arts.List) < 2 {
					t.Errorf("rendered only %d files", len(arts.List))
				}

				noSecrets(t, cfg, arts)
			})
		}
	}

	if accepted < 20 {
		t.Errorf("only %d config/mode pairs are accepted: the corpus lost its point", accepted)
	}
}

// noSecrets: no secret of cfg long enough to be told from other text is in
// a redacted render.
func noSecrets(t *testing.T, cfg *configs.Config, arts *render.Artifacts) {
	t.Helper()

	clear, err := render.Render(cfg, render.Options{Mode: arts.Mode, WithSecrets: true})
	if err != nil {
		t.Fatal(err)
	}

	var secrets []string

	if cfg.Cluster != nil {
		secrets = append(secrets, cfg.Cluster.Token, cfg.Cluster.Secret, cfg.Cluster.SecretboxEncryptionSecret, cfg.Cluster.AESCBCEncryptionSecret)
		if _, s, ok := strings.Cut(cfg.Cluster.Token, "."); ok {
			secrets = append(secrets, s)
		}
	}

	if m := cfg.Machine; m != nil {
		secrets = append(secrets, m.Token)

		if m.Registries != nil {
			for _, c := range m.Registries.Config {
				if a := c.Auth; a != nil {
					secrets = append(secrets, a.Password, a.Auth, a.IdentityToken)
				}

				if c.TLS != nil && c.TLS.ClientIdentity != nil {
					secrets = append(secrets, strings.TrimSpace(string(c.TLS.ClientIdentity.Key)))
				}
			}
		}
	}

	for _, s := range secrets {
		if len(s) < 8 {
			continue
		}

		for _, a := range arts.List {
			if strings.Contains(string(a.Data), s) {
				t.Errorf("%s holds a secret of the config", a.Path)
			}
		}
	}

	if len(clear.List) != len(arts.List) {
		t.Errorf("with secrets %d files, without %d", len(clear.List), len(arts.List))
	}
}
