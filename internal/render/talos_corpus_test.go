package render_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

// TestTalosStabilityConfigs: every config Talos's gen config writes, for
// every Talos from 1.3 on (configs/testdata/talos), loads, validates in
// the mode it is for, renders, and encodes back to itself. A node in a
// container needs no install section; on metal Talos itself refuses the
// base configs (no install disk) and, in 1.12 and 1.13, the overrides
// (both install.extraKernelArgs and grubUseUKICmdline), and so does
// talosbox, with Talos's messages; from 1.14 on talosbox refuses the
// overrides on metal for their workload isolation, which it does not
// implement.
func TestTalosStabilityConfigs(t *testing.T) {
	files, err := filepath.Glob("../../configs/testdata/talos/stability/v1.*/*.yaml")
	if err != nil || len(files) < 52 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}

	for _, f := range files {
		minor, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(filepath.Dir(f)), "v1."))
		if err != nil {
			t.Fatal(err)
		}

		base := strings.HasPrefix(filepath.Base(f), "base-")

		t.Run(strings.TrimPrefix(f, "../../configs/testdata/talos/stability/"), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}

			cfg, warnings, err := render.Load(data, configs.ModeContainer)
			if err != nil {
				t.Fatalf("container mode: %v", err)
			}

			for _, w := range warnings {
				t.Logf("warning: %s", w)
			}

			var wantMetal string

			switch {
			case base && minor <= 13:
				wantMetal = "either install disk or diskSelector should be defined"
			case base:
				wantMetal = "install"
			case minor >= 14:
				// Talos 1.14's SecurityProfileConfig turns workload
				// isolation on, which talosbox does not implement.
				wantMetal = "talosbox does not implement workload isolation yet"
			case minor >= 12:
				wantMetal = "install.extraKernelArgs and install.grubUseUKICmdline can't be used together"
			}

			_, _, err = render.Load(data, configs.ModeMetal)

			switch {
			case wantMetal == "" && err != nil:
				t.Errorf("metal mode: %v", err)
			case wantMetal != "" && (err == nil || !strings.Contains(err.Error(), wantMetal)):
				t.Errorf("metal mode: error %v, want one saying %q", err, wantMetal)
			}

			roundTrip(t, cfg)
		})
	}
}

// roundTrip: the config encodes to what decodes to the same config,
// written the same way, and its redacted encoding holds no key.
func roundTrip(t *testing.T, cfg *configs.Config) {
	t.Helper()

	out, err := cfg.Encode()
	if err != nil {
		t.Fatalf("encode: %v", err)
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
		t.Fatalf("encode redacted: %v", err)
	}

	if strings.Contains(string(red), "PRIVATE KEY") || strings.Contains(string(red), "LS0tLS1CRUdJTiBFQyBQUklWQVRF") {
		t.Errorf("the redacted encoding holds a private key:\n%s", red)
	}
}

// TestTalosLoaderInputs: the configs Talos's loader tests read. The old
// single-document ones load; documents alone decode (a node still needs
// the v1alpha1 document); SideroLink, Omni's management tunnel, is
// refused by name.
func TestTalosLoaderInputs(t *testing.T) {
	for _, tc := range []struct {
		file, decodeErr, validateErr string
	}{
		{file: "controlplane.yaml"},
		{file: "worker.yaml", validateErr: "trusted CA certificates are required on non-controlplane nodes"},
		{file: "empty1.yaml", validateErr: "cluster instructions are required"},
		{file: "empty2.yaml", validateErr: "machine instructions are required"},
		{file: "multidoc1.yaml", decodeErr: "document kind SideroLinkConfig (apiVersion v1alpha1) is a Talos config document talosbox does not implement yet"},
		{file: "multidoc2.yaml", validateErr: "the config has no v1alpha1 document"},
		{file: "multidoc3.yaml", validateErr: "the config has no v1alpha1 document"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("../../configs/testdata/talos/loader", tc.file))
			if err != nil {
				t.Fatal(err)
			}

			cfg, err := configs.Decode(data)

			switch {
			case tc.decodeErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.decodeErr) {
					t.Fatalf("decode: %v, want an error saying %q", err, tc.decodeErr)
				}

				// Only that: every other document of the file decodes.
				if strings.Count(err.Error(), "line ") != 1 {
					t.Errorf("decode: more problems than %q: %v", tc.decodeErr, err)
				}

				return
			case err != nil:
				t.Fatalf("decode: %v", err)
			}

			roundTrip(t, cfg)

			_, _, err = render.Load(data, configs.ModeContainer)

			switch {
			case tc.validateErr == "" && err != nil:
				t.Errorf("validate: %v", err)
			case tc.validateErr != "" && (err == nil || !strings.Contains(err.Error(), tc.validateErr)):
				t.Errorf("validate: %v, want an error saying %q", err, tc.validateErr)
			}
		})
	}
}
