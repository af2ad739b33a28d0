package configs_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// netDocCase is one case of a network document kind's table: documents
// after a v1alpha1 document (testdata/full/<base>.yaml with v1 merged
// in), decoded and validated.
type netDocCase struct {
	name string
	// base is testdata/full/<base>.yaml; minimal-controlplane when
	// empty.
	base string
	// v1 is merged into the v1alpha1 document (as configWith does).
	v1   string
	docs string
	// decodeErr, when set, is what the decode error must say.
	decodeErr string
	errs      []string
	warns     []string
	// effective checks the effective config (what the documents fold
	// into); it runs only when the config decodes.
	effective func(t *testing.T, cfg *configs.Config)
}

// netDocConfig is the config text of a case: the v1alpha1 document, then
// the documents.
func netDocConfig(t *testing.T, base, v1, docs string) string {
	t.Helper()

	if base == "" {
		base = "minimal-controlplane"
	}

	out, err := configWith(t, base, v1).Encode()
	if err != nil {
		t.Fatal(err)
	}

	return string(out) + "---\n" + docs
}

func runNetDocCases(t *testing.T, cases []netDocCase) {
	t.Helper()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cfg, err := configs.Decode([]byte(netDocConfig(t, tc.base, tc.v1, tc.docs)))

			switch {
			case tc.decodeErr != "" && (err == nil || !strings.Contains(err.Error(), tc.decodeErr)):
				t.Fatalf("decode error %v, want one saying %q", err, tc.decodeErr)
			case tc.decodeErr != "":
				return
			case err != nil:
				t.Fatalf("decode: %v", err)
			}

			warnings, err := cfg.Validate(configs.ModeMetal)

			if got := problems(err); !reflect.DeepEqual(got, tc.errs) {
				t.Errorf("errors:\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(tc.errs, "\n     "))
			}

			if !reflect.DeepEqual(warnings, tc.warns) {
				t.Errorf("warnings:\ngot  %q\nwant %q", warnings, tc.warns)
			}

			if tc.effective != nil {
				tc.effective(t, cfg)
			}
		})
	}
}

// checkNetDocRoundTrip: the config encodes to what decodes to the same
// config, written the same way and meaning the same; its redacted
// encoding holds none of secrets and masks as many values.
func checkNetDocRoundTrip(t *testing.T, docs string, secrets ...string) {
	t.Helper()

	cfg, err := configs.Decode([]byte(netDocConfig(t, "", "", docs)))
	if err != nil {
		t.Fatal(err)
	}

	out, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	again, err := configs.Decode(out)
	if err != nil {
		t.Fatalf("decode the encoding: %v\n%s", err, out)
	}

	if !configs.SameWritten(cfg, again) {
		t.Errorf("the encoding is written differently:\n%s", out)
	}

	if changes, err := configs.Compare(cfg, again); err != nil || len(changes) > 0 {
		t.Errorf("the encoding means something else: %v %v", changes, err)
	}

	red, err := cfg.EncodeRedacted()
	if err != nil {
		t.Fatal(err)
	}

	docPart := string(red[strings.Index(string(red), "---"):])

	for _, s := range secrets {
		if !strings.Contains(docs, s) {
			t.Fatalf("secret %q is not in the documents", s)
		}

		if strings.Contains(string(red), s) {
			t.Errorf("the redacted encoding holds %q:\n%s", s, docPart)
		}
	}

	if got := strings.Count(docPart, configs.Redacted); got != len(secrets) {
		t.Errorf("the redacted documents mask %d values, want %d:\n%s", got, len(secrets), docPart)
	}
}

// checkNetDocPatch applies patch (a strategic merge patch or a JSON
// patch) to the config of docs and hands the patched config to check.
func checkNetDocPatch(t *testing.T, docs, patch string, check func(t *testing.T, cfg *configs.Config)) {
	t.Helper()

	p, err := configpatch.Parse([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}

	out, err := configpatch.Apply([]byte(netDocConfig(t, "", "", docs)), p...)
	if err != nil {
		t.Fatalf("apply %s: %v", p[0], err)
	}

	cfg, err := configs.Decode(out)
	if err != nil {
		t.Fatalf("decode the patched config: %v\n%s", err, out)
	}

	check(t, cfg)
}

// netDoc is the only document of type T in cfg, failing the test when
// there is not exactly one.
func netDoc[T configs.Document](t *testing.T, cfg *configs.Config) T {
	t.Helper()

	docs := configs.DocumentsOf[T](cfg)
	if len(docs) != 1 {
		t.Fatalf("%d documents of the kind, want 1", len(docs))
	}

	return docs[0]
}

// iface is the effective machine.network.interfaces entry of name.
func iface(t *testing.T, cfg *configs.Config, name string) configs.Device {
	t.Helper()

	if cfg.Machine == nil || cfg.Machine.Network == nil {
		t.Fatalf("no machine.network in the effective config")
	}

	var found []configs.Device

	for _, d := range cfg.Machine.Network.Interfaces {
		if d.Interface == name {
			found = append(found, d)
		}
	}

	if len(found) != 1 {
		t.Fatalf("%d interfaces entries for %s, want 1: %+v", len(found), name, cfg.Machine.Network.Interfaces)
	}

	return found[0]
}
