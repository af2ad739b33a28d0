package applet_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/applet"
)

// recorder is an applet that records how it was called.
type recorder struct {
	name string
	args []string
	runs int
}

func (r *recorder) applet(aliases ...string) applet.Applet {
	return applet.Applet{
		Name:    r.name,
		Aliases: aliases,
		Summary: "the " + r.name + " applet",
		Main: func(_ context.Context, args []string, env applet.Env) int {
			r.runs++
			r.args = args
			env.Stdout.Write([]byte(r.name)) //nolint:errcheck

			return 3
		},
	}
}

func testMulticall() (*applet.Multicall, map[string]*recorder) {
	recs := map[string]*recorder{"machined": {name: "machined"}, "talosctl": {name: "talosctl"}}
	m := &applet.Multicall{
		Name:    "talosbox",
		Applets: []applet.Applet{recs["machined"].applet("init"), recs["talosctl"].applet()},
	}

	return m, recs
}

func run(m *applet.Multicall, argv ...string) (int, string, string) {
	var out, errOut bytes.Buffer

	code := m.Run(context.Background(), argv, applet.Env{Stdout: &out, Stderr: &errOut, Getenv: func(string) string { return "" }})

	return code, out.String(), errOut.String()
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		name     string
		argv     []string
		code     int
		applet   string   // which recorder must have run
		args     []string // with these arguments
		stdout   string   // substring of stdout
		stderr   string   // substring of stderr
		noStdout bool
	}{
		{name: "argv0 applet", argv: []string{"/usr/bin/talosctl", "get", "members"}, code: 3, applet: "talosctl", args: []string{"get", "members"}},
		{name: "argv0 alias", argv: []string{"/init"}, code: 3, applet: "machined", args: []string{}},
		{name: "argv0 relative", argv: []string{"./machined", "--debug"}, code: 3, applet: "machined", args: []string{"--debug"}},
		{name: "talosbox APPLET", argv: []string{"talosbox", "talosctl", "version", "--client"}, code: 3, applet: "talosctl", args: []string{"version", "--client"}},
		{name: "renamed multicall", argv: []string{"/tmp/talosbox-amd64", "init"}, code: 3, applet: "machined", args: []string{}},
		{name: "no applet lists", argv: []string{"talosbox"}, code: 0, stdout: "machined, init  the machined applet"},
		{name: "--help lists", argv: []string{"talosbox", "--help"}, code: 0, stdout: "talosctl        the talosctl applet"},
		{name: "--version", argv: []string{"talosbox", "--version"}, code: 0, stdout: "talosbox v"},
		{name: "--list", argv: []string{"talosbox", "--list"}, code: 0, stdout: "machined\ninit\ntalosctl\n"},
		{name: "unknown applet", argv: []string{"talosbox", "kubelet"}, code: applet.ExitNotFound, stderr: "talosbox: applet not found: kubelet\n\ntalosbox: one binary", noStdout: true},
		{name: "unknown argv0", argv: []string{"/sbin/udevd"}, code: applet.ExitNotFound, stderr: "applet not found: udevd", noStdout: true},
		{name: "unknown flag", argv: []string{"talosbox", "--frobnicate"}, code: 2, stderr: `unknown flag "--frobnicate"`},
		{name: "install without dir", argv: []string{"talosbox", "--install"}, code: 2, stderr: "--install: missing DIR"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, recs := testMulticall()
			code, stdout, stderr := run(m, tt.argv...)

			if code != tt.code {
				t.Errorf("exit = %d, want %d (stderr %q)", code, tt.code, stderr)
			}

			for name, r := range recs {
				ran := r.runs > 0
				if ran != (name == tt.applet) {
					t.Errorf("applet %s ran=%v", name, ran)
				}

				if ran && strings.Join(r.args, " ") != strings.Join(tt.args, " ") {
					t.Errorf("applet %s args = %q, want %q", name, r.args, tt.args)
				}
			}

			if !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout %q does not contain %q", stdout, tt.stdout)
			}

			if !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr %q does not contain %q", stderr, tt.stderr)
			}

			if tt.noStdout && stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

func TestInstall(t *testing.T) {
	m, recs := testMulticall()
	dir := filepath.Join(t.TempDir(), "bin")
	target := "/opt/talosbox/talosbox"

	made, err := m.Install(dir, target, false)
	if err != nil {
		t.Fatal(err)
	}

	if len(made) != 3 {
		t.Fatalf("made %v, want machined, init and talosctl", made)
	}

	for _, name := range []string{"machined", "init", "talosctl"} {
		link := filepath.Join(dir, name)

		got, err := os.Readlink(link)
		if err != nil || got != target {
			t.Fatalf("%s -> %q (%v), want %s", name, got, err, target)
		}

		// The link's name is what the dispatcher sees as argv[0].
		if code, _, _ := run(m, link); code != 3 {
			t.Fatalf("running via %s exited %d", link, code)
		}
	}

	if recs["machined"].runs != 2 || recs["talosctl"].runs != 1 {
		t.Fatalf("runs: machined %d talosctl %d", recs["machined"].runs, recs["talosctl"].runs)
	}

	// Re-installing replaces our own links, pointing them somewhere new.
	if _, err := m.Install(dir, "/new/talosbox", false); err != nil {
		t.Fatal(err)
	}

	if got, _ := os.Readlink(filepath.Join(dir, "init")); got != "/new/talosbox" {
		t.Fatalf("init -> %s after reinstall", got)
	}

	// A regular file in the way is refused and left alone...
	regular := filepath.Join(dir, "talosctl")
	if err := os.Remove(regular); err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(regular, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}

	_, err = m.Install(dir, target, false)
	if !errors.Is(err, applet.ErrNotSymlink) || !strings.Contains(err.Error(), regular) {
		t.Fatalf("install over a file: %v", err)
	}

	if b, _ := os.ReadFile(regular); string(b) != "precious" {
		t.Fatal("the refused file was changed")
	}

	// ...unless forced.
	if _, err := m.Install(dir, target, true); err != nil {
		t.Fatal(err)
	}

	if got, _ := os.Readlink(regular); got != target {
		t.Fatalf("forced install left %s -> %q", regular, got)
	}

	// A directory is never replaced.
	if err := os.Remove(filepath.Join(dir, "init")); err != nil {
		t.Fatal(err)
	}

	if err := os.Mkdir(filepath.Join(dir, "init"), 0o755); err != nil {
		t.Fatal(err)
	}

	if _, err := m.Install(dir, target, true); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("install over a directory: %v", err)
	}
}

func TestPendingApplet(t *testing.T) {
	a := applet.Pending("apid", "node API", "Serve the node API.", "issue 5")

	var out, errOut bytes.Buffer

	env := applet.Env{Stdout: &out, Stderr: &errOut}

	if code := a.Main(context.Background(), []string{"--help"}, env); code != 0 || !strings.Contains(out.String(), "not built yet in this talosbox (planned in issue 5)") {
		t.Fatalf("--help: %d %q", code, out.String())
	}

	out.Reset()

	if code := a.Main(context.Background(), []string{"--version"}, env); code != 0 || !strings.HasPrefix(out.String(), "apid v") {
		t.Fatalf("--version: %d %q", code, out.String())
	}

	if code := a.Main(context.Background(), nil, env); code == 0 || !strings.Contains(errOut.String(), "apid: not built yet") {
		t.Fatalf("run: %d %q; a pending applet must fail and say so", code, errOut.String())
	}
}

// TestReexecutedApplet: an applet that runs /proc/self/exe with its own
// flags only (the containerd shim) is found through TALOSBOX_APPLET; an
// applet name or a bare binary still wins over it.
func TestReexecutedApplet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		argv   []string
		applet string
		args   []string
	}{
		{"flags only", []string{"/talosbox", "-namespace", "k8s.io", "-id", "x"}, "talosctl", []string{"-namespace", "k8s.io", "-id", "x"}},
		{"no arguments", []string{"/talosbox"}, "talosctl", []string{}},
		{"as /init in an initramfs", []string{"/init", "-id", "x"}, "talosctl", []string{"-id", "x"}},
		{"an applet named", []string{"/talosbox", "machined"}, "machined", []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, recs := testMulticall()

			var out bytes.Buffer

			env := applet.Env{Stdout: &out, Stderr: &out, Getenv: func(k string) string {
				if k == applet.AppletEnv {
					return "talosctl"
				}

				return ""
			}}

			m.Run(context.Background(), tc.argv, env)

			r := recs[tc.applet]
			if r.runs != 1 || strings.Join(r.args, " ") != strings.Join(tc.args, " ") {
				t.Fatalf("%s ran %d times with %q, want once with %q", tc.applet, r.runs, r.args, tc.args)
			}
		})
	}
}
