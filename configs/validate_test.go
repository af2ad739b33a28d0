package configs_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
)

// mergeInto applies a YAML merge patch: mappings merge, a null deletes,
// anything else replaces (lists included).
func mergeInto(dst, patch map[string]any) {
	for k, pv := range patch {
		if pv == nil {
			delete(dst, k)

			continue
		}

		if pm, ok := pv.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, pm)

				continue
			}
		}

		dst[k] = pv
	}
}

// configWith decodes testdata/full/<base>.yaml with patch merged in.
func configWith(t *testing.T, base, patch string) *configs.Config {
	t.Helper()

	data, err := os.ReadFile("testdata/full/" + base + ".yaml")
	if err != nil {
		t.Fatal(err)
	}

	var doc, p map[string]any
	if err = yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}

	if err = yaml.Unmarshal([]byte(patch), &p); err != nil {
		t.Fatalf("bad patch: %v", err)
	}

	mergeInto(doc, p)

	out, err := yaml.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := configs.Decode(out)
	if err != nil {
		t.Fatalf("patched config does not decode: %v\n%s", err, out)
	}

	return cfg
}

func problems(err error) []string {
	if err == nil {
		return nil
	}

	var list *configs.Errors
	if !errors.As(err, &list) {
		return []string{"not *configs.Errors: " + err.Error()}
	}

	out := make([]string, len(list.List))
	for i, e := range list.List {
		out[i] = e.Error()
	}

	return out
}

// validateCase is one golden validation case. Every case starts from a
// config that validates cleanly, so the listed problems are all caused by
// the patch.
type validateCase struct {
	name      string
	base      string // testdata/full/<base>.yaml; minimal-controlplane when empty
	patch     string
	mode      configs.Mode
	strict    bool
	wantErrs  []string
	wantWarns []string
}

// runValidateCases checks the exact problems each case produces.
func runValidateCases(t *testing.T, tests []validateCase) {
	t.Helper()

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			base := tc.base
			if base == "" {
				base = "minimal-controlplane"
			}

			mode := tc.mode
			if mode == "" {
				mode = configs.ModeMetal
			}

			cfg := configWith(t, base, tc.patch)

			warnings, err := cfg.Validate(mode, configs.WithStrict(tc.strict))

			if got := problems(err); !reflect.DeepEqual(got, tc.wantErrs) {
				t.Errorf("errors:\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tc.wantErrs, "\n     "))
			}

			if !reflect.DeepEqual(warnings, tc.wantWarns) {
				t.Errorf("warnings:\ngot  %q\nwant %q", warnings, tc.wantWarns)
			}
		})
	}
}

func TestValidateFullConfigs(t *testing.T) {
	t.Parallel()

	for _, name := range []string{"controlplane", "worker", "minimal-controlplane"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()

			cfg := configWith(t, name, "{}")

			warnings, err := cfg.Validate(configs.ModeMetal, configs.WithStrict(true))
			if err != nil || len(warnings) != 0 {
				t.Fatalf("want a clean config, got warnings %q, err %v", warnings, err)
			}

			roundTrip(t, cfg)
		})
	}
}

func TestValidateErrorFormat(t *testing.T) {
	t.Parallel()

	cfg := configWith(t, "worker", `{machine: {type: x, token: bad}}`)

	_, err := cfg.Validate(configs.ModeMetal)

	want := "2 errors occurred:\n" +
		"\t* machine.type: unknown machine type \"x\"\n" +
		"\t* machine.token: trustd token is invalid (expected [a-z0-9]{6}.[a-z0-9]{16})\n\n"
	if err == nil || err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}

	var ve *configs.ValidationError
	if !errors.As(err, &ve) || ve.Path != "machine.type" {
		t.Fatalf("want the first *ValidationError reachable with errors.As, got %#v", ve)
	}

	warnings, err := configWith(t, "minimal-controlplane", `machine: {type: init}`).Validate(configs.ModeMetal)
	if err != nil || len(warnings) != 1 || !strings.HasPrefix(warnings[0], `machine.type: machine type "init" is deprecated`) {
		t.Fatalf("type init: warnings %q, err %v; want one warning and no error", warnings, err)
	}

	_, err = configWith(t, "minimal-controlplane", `machine: {type: init}`).Validate(configs.ModeMetal, configs.WithStrict(true))
	if err == nil || !strings.HasPrefix(err.Error(), "1 error occurred:\n\t* warning: machine.type: machine type \"init\" is deprecated") {
		t.Fatalf("strict: got %q", err)
	}
}

func TestValidateNil(t *testing.T) {
	t.Parallel()

	var cfg *configs.Config

	if _, err := cfg.Validate(configs.ModeMetal); err == nil || err.Error() != "1 error occurred:\n\t* config is empty\n\n" {
		t.Fatalf("got %v", err)
	}
}

func TestParseMode(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]configs.Mode{"metal": configs.ModeMetal, "Container": configs.ModeContainer, "cloud": configs.ModeCloud} {
		if got, err := configs.ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v", in, got, err)
		}
	}

	if _, err := configs.ParseMode("docker"); err == nil || err.Error() != `unknown mode "docker" (expected metal, container or cloud)` {
		t.Errorf("ParseMode(docker) error = %v", err)
	}

	if !configs.ModeMetal.RequiresInstall() || configs.ModeContainer.RequiresInstall() || configs.ModeCloud.RequiresInstall() {
		t.Error("only metal requires install")
	}
}
