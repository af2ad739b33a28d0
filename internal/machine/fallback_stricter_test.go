package machine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// A config that brought the node to running is booted again even when
// this version's validation refuses it (an OS upgrade made it stricter):
// the node runs on, and the problem is published for the next apply.
func TestConfigThatRanBeforeBootsUnderStricterValidation(t *testing.T) {
	good := workerConfig(t, hostname("good"))
	n := startNode(t, "", good)

	waitReady(t, n)

	// As if written by an earlier version: validation now refuses the
	// blank inline manifest name, while nothing on a worker renders it.
	stricter := workerConfig(t, hostname("older"), `{cluster: {inlineManifests: [{name: "  ", contents: "{apiVersion: v1, kind: Namespace, metadata: {name: x}}"}]}}`)
	writeState(t, n, stricter)

	if err := os.WriteFile(filepath.Join(n.dir, "state", machine.LastGoodConfigFile), stricter, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := n.Reboot(context.Background()); err != nil {
		t.Fatal(err)
	}

	waitStage(t, n, runtime.StageRunning)

	if h := hostnameOf(t, n); h != "older" {
		t.Errorf("hostname %q: the config that ran before was not booted", h)
	}

	rec := waitFor(t, n, errorPtr, "load error", func(r *runtime.ConfigLoadError) bool {
		return strings.Contains(r.TypedSpec().Error, `inline manifest name can't be empty`)
	})
	if !strings.Contains(rec.TypedSpec().Source, "booted anyway") {
		t.Errorf("load error source %q", rec.TypedSpec().Source)
	}

	if !bytes.Equal(stateFile(t, n, machine.ConfigFile), stricter) {
		t.Error("STATE's config was replaced")
	}
}
