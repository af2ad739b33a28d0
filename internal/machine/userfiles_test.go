package machine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/userfiles"
)

// The fallback to the last good config restores exactly that config's
// files: what the failed config wrote before its boot failed is undone
// (a file it added removed, one it changed given back the good config's
// content), and a later config that drops a file removes it.
func TestFallbackRestoresFiles(t *testing.T) {
	good := workerConfig(t, hostname("good"), "machine: {files: [{path: /var/fb/keep, content: good, op: create}]}")
	n := startNode(t, "", good)
	ctx := context.Background()
	eph := func(p string) string { return filepath.Join(n.dir, "ephemeral", p) }

	waitReady(t, n)
	blockPath(t, n.dir, "/var/fallback/d")

	// Written in order: keep and new land, then the blocked one fails the
	// boot.
	bad := workerConfig(t, hostname("bad"), "machine: {files: [{path: /var/fb/keep, content: bad, op: create}, {path: /var/fb/new/f, content: new, op: create}, {path: /var/fallback/d, content: y, op: overwrite}]}")

	if _, err := n.ApplyConfiguration(ctx, bad, machine.ApplyOptions{Mode: machine.ModeStaged}); err != nil {
		t.Fatal(err)
	}

	if err := n.Reboot(ctx); err != nil {
		t.Fatal(err)
	}

	waitStage(t, n, runtime.StageRunning)
	rec := bootRecord(t, n, "/var/fallback/d")
	assertFellBack(t, n, good, bad, rec, "writeUserFiles")

	if got, err := os.ReadFile(eph("/var/fb/keep")); err != nil || string(got) != "good" {
		t.Errorf("/var/fb/keep = %q (%v), want the last good config's", got, err)
	}

	for _, p := range []string{"/var/fb/new/f", "/var/fb/new"} {
		if _, err := os.Lstat(eph(p)); !os.IsNotExist(err) {
			t.Errorf("%s, written by the failed config, is still there (%v)", p, err)
		}
	}

	con := n.console.String()
	if !strings.Contains(con, "[talos] machine files removed (the config no longer writes them): /var/fb/new/f") {
		t.Errorf("the console does not say what was removed:\n%s", con)
	}

	m, err := userfiles.LoadManifest(filepath.Join(n.dir, "state"))
	if err != nil || len(m.Files) != 1 || m.Files[0].Path != "/var/fb/keep" {
		t.Errorf("manifest %+v (%v), want /var/fb/keep alone", m, err)
	}

	// A config without the file, with a reboot: the file goes.
	none := workerConfig(t, hostname("dropped"))
	if _, err := n.ApplyConfiguration(ctx, none, machine.ApplyOptions{Mode: machine.ModeStaged}); err != nil {
		t.Fatal(err)
	}

	if err := n.Reboot(ctx); err != nil {
		t.Fatal(err)
	}

	// The config is published before the files are written, running
	// after.
	waitFor(t, n, activeConfig, "the config without files", func(r *config.MachineConfig) bool {
		return r.TypedSpec().Config.Machine.Network.Hostname == "dropped"
	})
	waitStage(t, n, runtime.StageRunning)

	if _, err := os.Lstat(eph("/var/fb")); !os.IsNotExist(err) {
		t.Errorf("/var/fb is still there after a config that drops it (%v)", err)
	}
}

var activeConfig = bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID}
