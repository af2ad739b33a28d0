package platform_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/platform"
)

func TestDetect(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	none := func(string) bool { return false }
	docker := func(p string) bool { return p == "/.dockerenv" }

	tests := []struct {
		name string
		opts platform.Options
		want platform.Platform
		err  string
	}{
		{"flag wins", platform.Options{Flag: "container", StateDir: "/srv/node", Getenv: env(map[string]string{"TALOSBOX_PLATFORM": "metal"}), Exists: none},
			platform.Platform{Name: "container", StateDir: "/srv/node/state", EphemeralDir: "/srv/node/ephemeral", Root: "/"}, ""},
		{"env next", platform.Options{Getenv: env(map[string]string{"TALOSBOX_PLATFORM": "metal"}), Exists: docker, PID: 42},
			platform.Platform{Name: "metal", StateDir: "/system/state", EphemeralDir: "/var", Root: "/", OwnRoot: true}, ""},
		{"docker detected", platform.Options{Getenv: env(nil), Exists: docker, PID: 1},
			platform.Platform{Name: "container", StateDir: "/var/lib/talosbox/state", EphemeralDir: "/var/lib/talosbox/ephemeral", Root: "/"}, ""},
		{"a node image's PID 1", platform.Options{Getenv: env(map[string]string{"TALOSBOX_OWN_ROOT": "1"}), Exists: docker, PID: 1},
			platform.Platform{Name: "container", StateDir: "/var/lib/talosbox/state", EphemeralDir: "/var/lib/talosbox/ephemeral", Root: "/", OwnRoot: true}, ""},
		{"docker, not PID 1", platform.Options{Getenv: env(nil), Exists: docker, PID: 7},
			platform.Platform{Name: "container", StateDir: "/var/lib/talosbox/state", EphemeralDir: "/var/lib/talosbox/ephemeral", Root: "/"}, ""},
		{"PID 1 in namespaces over the host's files", platform.Options{Flag: "container", Getenv: env(nil), Exists: none, PID: 1},
			platform.Platform{Name: "container", StateDir: "/var/lib/talosbox/state", EphemeralDir: "/var/lib/talosbox/ephemeral", Root: "/"}, ""},
		{"systemd container env", platform.Options{Getenv: env(map[string]string{"container": "podman"}), Exists: none, PID: 1},
			platform.Platform{Name: "container", StateDir: "/var/lib/talosbox/state", EphemeralDir: "/var/lib/talosbox/ephemeral", Root: "/"}, ""},
		{"pid 1 on a machine", platform.Options{Getenv: env(nil), Exists: none, PID: 1},
			platform.Platform{Name: "metal", StateDir: "/system/state", EphemeralDir: "/var", Root: "/", OwnRoot: true}, ""},
		{"refuses a workstation", platform.Options{Getenv: env(nil), Exists: none, PID: 4242}, platform.Platform{},
			"cannot detect the platform: not PID 1 and not in a container; use --platform metal|container"},
		{"unknown", platform.Options{Flag: "cloud9", Getenv: env(nil), Exists: none}, platform.Platform{},
			`unknown platform "cloud9": use metal or container`},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := platform.Detect(tt.opts)
			if fmt.Sprint(err) != map[bool]string{true: "<nil>", false: tt.err}[tt.err == ""] {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}

			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseCmdline(t *testing.T) {
	c := platform.ParseCmdline(`console=ttyS0 panic=-1 talos.platform=metal talos.config="http://10.0.2.2:8080/a b.yaml" quiet talos.hostname=old talos.hostname=node-1` + "\n")

	for key, want := range map[string]string{
		"talos.platform": "metal",
		"talos.config":   "http://10.0.2.2:8080/a b.yaml",
		"talos.hostname": "node-1",
		"quiet":          "",
		"console":        "ttyS0",
	} {
		if got, ok := c.Get(key); !ok || got != want {
			t.Errorf("%s = %q (%v), want %q", key, got, ok, want)
		}
	}

	if _, ok := c.Get("talos.missing"); ok {
		t.Error("missing key reported present")
	}
}

func TestFetchConfig(t *testing.T) {
	ctx := context.Background()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			fmt.Fprint(w, "version: v1alpha1\n")
		case "/huge":
			w.Write([]byte(strings.Repeat("x", platform.MaxConfigSize+10))) //nolint:errcheck
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	if data, err := platform.FetchConfig(ctx, srv.URL+"/ok"); err != nil || string(data) != "version: v1alpha1\n" {
		t.Fatalf("fetch ok: %q %v", data, err)
	}

	if _, err := platform.FetchConfig(ctx, srv.URL+"/huge"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("fetch huge: %v", err)
	}

	if _, err := platform.FetchConfig(ctx, srv.URL+"/missing"); err == nil || !strings.Contains(err.Error(), "404 Not Found") {
		t.Fatalf("fetch missing: %v", err)
	}

	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("machine: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	if data, err := platform.FetchConfig(ctx, path); err != nil || string(data) != "machine: {}\n" {
		t.Fatalf("file: %q %v", data, err)
	}

	if _, err := platform.FetchConfig(ctx, "/nonexistent/c.yaml"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestFetchConfigDataURL(t *testing.T) {
	tests := []struct {
		name, url, want, err string
	}{
		{"base64", "data:;base64,dmVyc2lvbjogdjFhbHBoYTEK", "version: v1alpha1\n", ""},
		{"base64 without padding", "data:application/yaml;base64,bWFjaGluZToge30", "machine: {}", ""},
		{"percent-encoded", "data:,machine%3A%20%7B%7D%0A", "machine: {}\n", ""},
		{"no comma", "data:;base64", "", "read config from a data: URL: no comma before the data"},
		{"bad base64", "data:;base64,!!!", "", "read config from a data: URL: illegal base64 data at input byte 0"},
		{"bad escape", "data:,%zz", "", `read config from a data: URL: invalid URL escape "%zz"`},
		{"too big", "data:," + strings.Repeat("x", 6<<20), "", "read config from a data: URL: larger than 4194304 bytes"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := platform.FetchConfig(context.Background(), tt.url)
			if fmt.Sprint(err) != map[bool]string{true: "<nil>", false: tt.err}[tt.err == ""] {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}

			if string(data) != tt.want {
				t.Fatalf("data = %q, want %q", data, tt.want)
			}
		})
	}

	if got := platform.DescribeSource("data:;base64,c2VjcmV0"); got != "a data: URL (21 bytes)" {
		t.Errorf("DescribeSource hides nothing: %q", got)
	}

	if got := platform.DescribeSource("http://10.0.2.2/c.yaml"); got != "http://10.0.2.2/c.yaml" {
		t.Errorf("DescribeSource(http) = %q", got)
	}
}

func TestFatalAction(t *testing.T) {
	tests := []struct {
		cmdline, action, unknown string
	}{
		{"console=ttyS0", platform.FatalWait, ""},
		{"talosbox.fatal=", platform.FatalWait, ""},
		{"talosbox.fatal=wait", platform.FatalWait, ""},
		{"talosbox.fatal=poweroff", platform.FatalPowerOff, ""},
		{"talosbox.fatal=poweroff talosbox.fatal=reboot", platform.FatalReboot, ""},
		{"talosbox.fatal=halt", platform.FatalWait, "halt"},
	}

	for _, tt := range tests {
		t.Run(tt.cmdline, func(t *testing.T) {
			action, unknown := platform.ParseCmdline(tt.cmdline).FatalAction()
			if action != tt.action || unknown != tt.unknown {
				t.Fatalf("FatalAction = %q, %q; want %q, %q", action, unknown, tt.action, tt.unknown)
			}
		})
	}
}

func TestLoadBootModulesWithoutModules(t *testing.T) {
	var log strings.Builder

	dir := t.TempDir()
	if err := platform.LoadBootModules(dir, &log); err != nil {
		t.Fatal(err)
	}

	if want := "[talos] no " + filepath.Join(dir, "modules.dep") + ": no kernel modules to load\n"; log.String() != want {
		t.Fatalf("log %q, want %q", log.String(), want)
	}
}
