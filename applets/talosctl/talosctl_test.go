package talosctl_test

import (
	"bytes"
	"context"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/applets/talosctl"
	"github.com/talosbox/talosbox/internal/applet"
)

func runCtl(args ...string) (int, string, string) {
	var out, errOut bytes.Buffer

	code := talosctl.Main(context.Background(), args, applet.Env{
		Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" },
	})

	return code, out.String(), errOut.String()
}

func TestCommands(t *testing.T) {
	tests := []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{[]string{"version", "--client"}, 0, "Client:\n\tTag:         v0.0.0-dev\n\tSHA:         unknown\n\tBuilt:       unknown\n\tGo version:  " + runtime.Version() + "\n\tOS/Arch:     " + runtime.GOOS + "/" + runtime.GOARCH + "\n", ""},
		{[]string{"version", "--client", "--short"}, 0, "Client:\n\tv0.0.0-dev\n", ""},
		{[]string{"version"}, 1, "Client:", "error: cannot find the talosconfig"},
		{[]string{"--help"}, 0, "talosctl manages talosbox nodes", ""},
		{[]string{"completion", "bash"}, 0, "# bash completion V2 for talosctl", ""},
		{[]string{"completion", "zsh"}, 0, "#compdef talosctl", ""},
		{[]string{"frobnicate"}, 1, "", `error: unknown command "frobnicate" for "talosctl"`},
		{[]string{"version", "--bogus"}, 1, "", "error: unknown flag: --bogus"},
	}

	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCtl(tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.code, stderr)
			}

			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout, tt.stdout)
			}

			if !strings.HasPrefix(stderr, tt.stderr) {
				t.Errorf("stderr %q does not start with %q", stderr, tt.stderr)
			}
		})
	}
}

// TestImportGraph keeps node-side packages out of talosctl, so the client
// stays small to reason about and cheap to start.
func TestImportGraph(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/talosbox/talosbox/applets/talosctl").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}

	forbidden := []string{
		"go.etcd.io/",
		// The containerd client; the Docker SDK's tiny errdefs is fine.
		"github.com/containerd/containerd",
		"github.com/vishvananda/netlink",
		// Kubernetes is reached through client-go's dynamic client and
		// clientcmd, which the node links too; the typed clientset and the
		// API types behind it would add every group's types and their
		// init cost to each start of the binary.
		"k8s.io/api/",
		"k8s.io/client-go/kubernetes",
		"k8s.io/kubernetes/",
		"k8s.io/kubectl/",
		"github.com/u-root/",
		"github.com/talosbox/talosbox/applets/machined",
		"github.com/talosbox/talosbox/applets/apid",
		"github.com/talosbox/talosbox/applets/trustd",
		"github.com/talosbox/talosbox/applets/networkd",
		"github.com/talosbox/talosbox/applets/etcd",
		"github.com/talosbox/talosbox/internal/machine",
		"github.com/talosbox/talosbox/internal/apid",
		"github.com/talosbox/talosbox/internal/controlplane",
		"github.com/talosbox/talosbox/internal/etcd",
	}

	// talosctl validate checks a config's CRI parts as containerd decodes
	// them, with containerd's own config types and plugin registrations
	// (internal/cri/validation): what that path needs is allowed, through
	// it alone (bbolt and netlink come with containerd's plugins), and
	// never a node-side package of talosbox's own.
	viaValidation, err := exec.Command("go", "list", "-deps", "github.com/talosbox/talosbox/internal/cri/validation").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, viaValidation)
	}

	allowed := map[string]bool{}
	for _, dep := range strings.Fields(string(viaValidation)) {
		allowed[dep] = true
	}

	for _, dep := range strings.Fields(string(out)) {
		if allowed[dep] && !strings.HasPrefix(dep, "github.com/talosbox/") {
			continue
		}

		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("talosctl imports %s", dep)
			}
		}
	}
}
