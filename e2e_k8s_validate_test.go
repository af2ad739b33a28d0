//go:build e2e

package main

import (
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/images"
)

// testKubeletValidatesAtApply: the node runs the kubelet's own
// validation, by the binary in the kubelet image it already has, on the
// config it is asked to apply (apply-config --dry-run through patch): a
// value that would stop the kubelet at start is refused in the kubelet's
// words, a valid one is accepted, and a config naming a kubelet version
// whose image the node does not have yet is accepted with a warning that
// it was not validated by that kubelet (nothing is pulled to validate).
// The cluster runs images.KubernetesPrevious here.
func testKubeletValidatesAtApply(t *testing.T, dc *dockerCluster, node string) {
	extra := func(v string) string {
		return `[{"op":"add","path":"/machine/kubelet/extraConfig","value":` + v + `}]`
	}

	start := time.Now()

	out, code := dc.talosctl("-n", node, "patch", "mc", "--dry-run", "-p", extra(`{"imageGCHighThresholdPercent":150}`))
	t.Logf("a refused dry run (the binary read from the image): %s", time.Since(start).Round(time.Millisecond))

	want := "machine.kubelet.extraConfig.imageGCHighThresholdPercent: kubelet " + images.KubernetesPrevious +
		" refuses it: invalid configuration: imageGCHighThresholdPercent (--image-gc-high-threshold) 150 must be between 0 and 100, inclusive"
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d, want the kubelet's refusal %q:\n%s", code, want, out)
	}

	start = time.Now()

	out, code = dc.talosctl("-n", node, "patch", "mc", "--dry-run", "-p", extra(`{"imageGCHighThresholdPercent":95,"imageGCLowThresholdPercent":90}`))
	t.Logf("an accepted dry run (the binary cached): %s", time.Since(start).Round(time.Millisecond))

	if code != 0 || strings.Contains(out, "not validated") || !strings.Contains(out, "imageGCHighThresholdPercent") {
		t.Errorf("a valid setting: exit %d, want it accepted, validated, in the diff:\n%s", code, out)
	}

	next := images.Kubelet(images.Kubernetes).String()

	out, code = dc.talosctl("-n", node, "patch", "mc", "--dry-run", "-p",
		`[{"op":"add","path":"/machine/kubelet/extraConfig","value":{"imageGCHighThresholdPercent":95}},`+
			`{"op":"replace","path":"/machine/kubelet/image","value":"`+next+`"}]`)

	want = "WARNING: machine.kubelet.extraConfig: not validated by kubelet " + images.Kubernetes + " itself: image " + next + ": not on this node"
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("a kubelet version not on the node: exit %d, want %q:\n%s", code, want, out)
	}
}
