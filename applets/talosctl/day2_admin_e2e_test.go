package talosctl_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/render"
)

// day2 is TestDay2Commands' node and how to run talosctl against it.
type day2 struct {
	node             *realNode
	dir, talosconfig string
	base             []string
}

// run runs talosctl against the node to its end.
func (d *day2) run(_ *testing.T, args ...string) (string, string, int) {
	out, errOut := newOutput(), newOutput()
	code := ctl(context.Background(), out, errOut, append(d.base, args...)...)

	return out.String(), errOut.String(), code
}

// ok is run that fails the test unless talosctl succeeds.
func (d *day2) ok(t *testing.T, args ...string) string {
	t.Helper()

	out, errOut, code := d.run(t, args...)
	if code != 0 {
		t.Fatalf("talosctl %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, code, out, errOut)
	}

	return out
}

// testSupportInProcess: one archive with the node's files in Talos's layout, and
// not one secret of the node's config in any of them, though an admin
// made it.
func testSupportInProcess(t *testing.T, d *day2) {
	n, dir, run := d.node, d.dir, d.run

	bundle := filepath.Join(t.TempDir(), "support.zip")

	out, errOut, code := run(t, "support", "-O", bundle, "-w", "4")
	if code != 0 || !strings.Contains(errOut, "Support bundle is written to "+bundle) {
		t.Fatalf("support: exit %d\n%s%s", code, out, errOut)
	}

	zr, err := zip.OpenReader(bundle)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()

	files := map[string]string{}

	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}

		b, err := io.ReadAll(rc)
		rc.Close()

		if err != nil {
			t.Fatal(err)
		}

		files[f.Name] = string(b)
	}

	for _, name := range []string{"summary", "dmesg.log", "controller-runtime.log", "dependencies.dot", "mounts", "processes", "netstat", "services",
		"service-logs/machined.log", "service-logs/machined.state", "resources/machineconfigs.config.talos.dev.yaml",
		"resources/securitystates.talos.dev.yaml", "resources/services.v1alpha1.talos.dev.yaml"} {
		if _, ok := files[n.addr+"/"+name]; !ok {
			t.Errorf("the bundle lacks %s/%s", n.addr, name)
		}
	}

	if errs, ok := files[n.addr+"/errors.log"]; ok {
		t.Errorf("errors collecting the bundle:\n%s", errs)
	}

	if mc := files[n.addr+"/resources/machineconfigs.config.talos.dev.yaml"]; !strings.Contains(mc, "hostname: node-1") || !strings.Contains(mc, `token: "******"`) {
		t.Errorf("the machine config in the bundle is not the redacted one:\n%s", mc)
	}

	text, err := os.ReadFile(filepath.Join(dir, "node-1.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := configs.Decode(text)
	if err != nil {
		t.Fatal(err)
	}

	secrets := slices.DeleteFunc(render.Secrets(cfg), func(s string) bool { return len(s) < 8 })
	if len(secrets) < 8 {
		t.Fatalf("only %d secrets in the node's config", len(secrets))
	}

	for name, data := range files {
		for _, s := range secrets {
			if strings.Contains(data, s) {
				t.Errorf("the bundle's %s holds a secret of the config (%.6s...)", name, s)
			}
		}
	}
}

// testRotateCAInProcess runs last: it changes the talosconfig every other step uses.
func testRotateCAInProcess(t *testing.T, d *day2) {
	n, dir, talosconfig, ok, run := d.node, d.dir, d.talosconfig, d.ok, d.run

	before, err := os.ReadFile(talosconfig)
	if err != nil {
		t.Fatal(err)
	}

	mc := ok(t, "get", "mc", "-o", "yaml")

	out := ok(t, "rotate-ca", "--kubernetes=false")
	for _, want := range []string{"> Starting Talos API PKI rotation, dry-run mode true...", "  - " + n.addr + ": skipped (dry-run)"} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate-ca (dry run) lacks %q:\n%s", want, out)
		}
	}

	if after, _ := os.ReadFile(talosconfig); !bytes.Equal(before, after) {
		t.Error("a dry run changed the talosconfig")
	}

	if after := ok(t, "get", "mc", "-o", "yaml"); after != mc {
		t.Error("a dry run changed the node's config")
	}

	// A dry run of both CAs says what it would do to the Kubernetes CA too.
	out = ok(t, "rotate-ca")
	for _, want := range []string{"> Starting Kubernetes API PKI rotation, dry-run mode true...", "> Making new Kubernetes CA the issuing CA, old Kubernetes CA the accepted CA...",
		"> Restarting kube-system's workloads so that they trust the new CA...\n - skipped (dry-run)", " - OK (dry-run mode)"} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate-ca (dry run, both CAs) lacks %q:\n%s", want, out)
		}
	}

	if _, errOut, code := run(t, "rotate-ca", "--talos=false", "--kubernetes=false"); code == 0 || !strings.Contains(errOut, "nothing to rotate") {
		t.Errorf("rotate-ca with nothing to rotate: exit %d, stderr %q", code, errOut)
	}

	old := filepath.Join(t.TempDir(), "old-talosconfig")
	if err := os.WriteFile(old, before, 0o600); err != nil {
		t.Fatal(err)
	}

	out = ok(t, "rotate-ca", "--dry-run=false", "--kubernetes=false")
	for _, want := range []string{
		"> Verifying connectivity with existing PKI:", "> Adding new Talos CA as accepted...",
		"> Verifying connectivity with new client cert, but old server CA:",
		"> Making new Talos CA the issuing CA, old Talos CA the accepted CA...",
		"> Removing old Talos CA from the accepted CAs...", "  - " + n.addr + ": OK (version ", "> Writing new talosconfig to " + talosconfig,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rotate-ca lacks %q:\n%s", want, out)
		}
	}

	// The new talosconfig works; the old one is refused.
	ok(t, "version")

	outOld, errOld := newOutput(), newOutput()
	if code := ctl(context.Background(), outOld, errOld, "--talosconfig", old, "-e", n.addr, "-n", n.addr, "version"); code == 0 {
		t.Errorf("the old talosconfig still works after the rotation:\n%s", outOld)
	}

	persisted, err := os.ReadFile(filepath.Join(dir, "node-1", "node", "state", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := configs.Decode(persisted)
	if err != nil {
		t.Fatal(err)
	}

	if len(cfg.Machine.AcceptedCAs) != 0 || bytes.Contains(before, []byte(base64.StdEncoding.EncodeToString(cfg.Machine.CA.Crt))) {
		t.Errorf("after the rotation machine.ca is still the old one or acceptedCAs is not empty: %d accepted", len(cfg.Machine.AcceptedCAs))
	}
}
