package userfiles

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func readFile(t *testing.T, p string) (string, os.FileMode) {
	t.Helper()

	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}

	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}

	return string(b), fi.Mode()
}

func TestOps(t *testing.T) {
	for _, tc := range []struct {
		name     string
		existing *string // content of the file before Write, if any
		file     configs.MachineFile
		want     string
		mode     os.FileMode
		err      string
	}{
		{
			name: "create a new file with default permissions",
			file: configs.MachineFile{Path: "/var/cri/conf.d/metrics.toml", Op: "create", Content: "[metrics]\n"},
			want: "[metrics]\n", mode: 0o644,
		},
		{
			name: "create with permissions",
			file: configs.MachineFile{Path: "/var/etc/x", Op: "create", Content: "x", Permissions: 0o600},
			want: "x", mode: 0o600,
		},
		{
			// The file an earlier boot wrote: /var persists across reboots.
			name:     "create replaces an existing file",
			existing: ptr("old"),
			file:     configs.MachineFile{Path: "/var/etc/x", Op: "create", Content: "new"},
			want:     "new", mode: 0o644,
		},
		{
			name:     "append to an existing file keeps its mode",
			existing: ptr("a\n"),
			file:     configs.MachineFile{Path: "/var/etc/x", Op: "append", Content: "b\n"},
			want:     "a\nb\n", mode: 0o640,
		},
		{
			name:     "append with permissions sets them",
			existing: ptr("a\n"),
			file:     configs.MachineFile{Path: "/var/etc/x", Op: "append", Content: "b\n", Permissions: 0o644},
			want:     "a\nb\n", mode: 0o644,
		},
		{
			name: "append creates a missing file",
			file: configs.MachineFile{Path: "/var/etc/x", Op: "append", Content: "b\n"},
			want: "b\n", mode: 0o644,
		},
		{
			name:     "overwrite replaces content and mode",
			existing: ptr("a much longer old content\n"),
			file:     configs.MachineFile{Path: "/var/etc/x", Op: "overwrite", Content: "new", Permissions: 0o755},
			want:     "new", mode: 0o755,
		},
		{
			name: "overwrite creates a missing file",
			file: configs.MachineFile{Path: "/var/etc/x", Op: "overwrite", Content: "new"},
			want: "new", mode: 0o644,
		},
		{
			name: "setuid, setgid and sticky bits survive",
			file: configs.MachineFile{Path: "/var/etc/x", Op: "create", Content: "s", Permissions: 0o7755},
			want: "s", mode: 0o755 | os.ModeSetuid | os.ModeSetgid | os.ModeSticky,
		},
		{
			name: "the CA bundle may be appended to",
			file: configs.MachineFile{Path: "/etc/ssl/certs/ca-certificates", Op: "append", Content: "-----BEGIN CERTIFICATE-----\n"},
			want: "-----BEGIN CERTIFICATE-----\n", mode: 0o644,
		},
		{
			name: "unknown op",
			file: configs.MachineFile{Path: "/var/etc/x", Op: "replace", Content: "x"},
			err:  `machine.files[0]: /var/etc/x: unsupported op "replace" (expected create, append or overwrite)`,
		},
		{
			name: "permissions out of range",
			file: configs.MachineFile{Path: "/var/etc/x", Op: "create", Permissions: 0o17777},
			err:  "machine.files[0]: /var/etc/x: permissions 0o17777: only the bits 0o7777 may be set",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			target := filepath.Join(root, tc.file.Path)

			if tc.existing != nil {
				if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
					t.Fatal(err)
				}

				if err := os.WriteFile(target, []byte(*tc.existing), 0o640); err != nil {
					t.Fatal(err)
				}
			}

			err := Write([]configs.MachineFile{tc.file}, Options{Root: root})

			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Write: %v", err)
			case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
				t.Fatalf("Write error = %v, want prefix %q", err, tc.err)
			}

			if tc.want == "" && tc.existing == nil {
				if _, err := os.Lstat(target); !os.IsNotExist(err) {
					t.Errorf("a refused file was written: %v", err)
				}

				return
			}

			got, mode := readFile(t, target)
			if got != tc.want {
				t.Errorf("content = %q, want %q", got, tc.want)
			}

			if mode != tc.mode {
				t.Errorf("mode = %v, want %v", mode, tc.mode)
			}

			// No temporary files are left next to the target.
			entries, err := os.ReadDir(filepath.Dir(target))
			if err != nil {
				t.Fatal(err)
			}

			if len(entries) != 1 {
				t.Errorf("directory holds %d entries, want only the file: %v", len(entries), entries)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func TestSequenceOnOneFile(t *testing.T) {
	root := t.TempDir()

	files := []configs.MachineFile{
		{Path: "/var/log/x", Op: "create", Content: "1\n"},
		{Path: "/var/log/x", Op: "append", Content: "2\n"},
	}

	// Twice, as two boots: the second starts from what the first left, and
	// must end with the same file (create replaces, then append adds).
	for boot := range 2 {
		if err := Write(files, Options{Root: root}); err != nil {
			t.Fatalf("boot %d: %v", boot, err)
		}

		if got, _ := readFile(t, filepath.Join(root, "var/log/x")); got != "1\n2\n" {
			t.Errorf("boot %d: content = %q", boot, got)
		}
	}
}

func TestRefusedPaths(t *testing.T) {
	root := t.TempDir()
	files := []configs.MachineFile{
		{Path: "/var/ok", Op: "create", Content: "ok"},
		{Path: "var/relative", Op: "create"},
		{Path: "/usr/bin/x", Op: "create"},
		{Path: "/var/../etc/shadow", Op: "overwrite"},
		{Path: "/var/lib/..", Op: "overwrite"},
		{Path: "/var", Op: "append"},
		{Path: "/var/", Op: "append"},
		{Path: "/etc/ssl/certs/ca-certificates.crt", Op: "append"},
		{Path: "/etc/cri/conf.d/hosts/docker.io/hosts.toml", Op: "create", Content: "server = \"https://registry-1.docker.io\"\n"},
	}

	err := Write(files, Options{Root: root})
	if err == nil {
		t.Fatal("Write accepted every path")
	}

	const rule = "files may only be written under /var/, /etc/cri/conf.d/hosts/ or to /etc/cri/conf.d/20-customization.part, /etc/ssl/certs/ca-certificates"

	want := []string{
		`machine.files[1]: path "var/relative" is not absolute`,
		`machine.files[2]: path "/usr/bin/x" is not writable: ` + rule,
		`machine.files[3]: path "/var/../etc/shadow" must not contain ".."`,
		`machine.files[4]: path "/var/lib/.." must not contain ".."`,
		`machine.files[5]: path "/var" is not writable: ` + rule,
		`machine.files[6]: path "/var/" names a directory, not a file`,
		`machine.files[7]: path "/etc/ssl/certs/ca-certificates.crt" is not writable: ` + rule,
	}

	if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The good files are written all the same.
	for p, content := range map[string]string{"var/ok": "ok", "etc/cri/conf.d/hosts/docker.io/hosts.toml": files[8].Content} {
		if got, _ := readFile(t, filepath.Join(root, p)); got != content {
			t.Errorf("%s = %q, want %q", p, got, content)
		}
	}

	for _, p := range []string{"usr", "etc/shadow", "var/relative"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a refused write (%v)", p, err)
		}
	}
}

func TestCustomAllowed(t *testing.T) {
	root := t.TempDir()
	opts := Options{Root: root, Allowed: []string{"/srv/data/"}}

	err := Write([]configs.MachineFile{{Path: "/var/x", Op: "create"}, {Path: "/srv/data/a/b", Op: "create", Content: "b"}}, opts)
	if err == nil || err.Error() != `machine.files[0]: path "/var/x" is not writable: files may only be written under /srv/data/` {
		t.Errorf("error = %v", err)
	}

	if got, _ := readFile(t, filepath.Join(root, "srv/data/a/b")); got != "b" {
		t.Errorf("content = %q", got)
	}

	for _, bad := range [][]string{{"var/"}, {"/"}, {"/var/../etc/"}, {"/var//"}} {
		err := Write([]configs.MachineFile{{Path: "/var/x", Op: "create"}}, Options{Root: root, Allowed: bad})
		if err == nil || !strings.Contains(err.Error(), "must be a clean absolute path") {
			t.Errorf("Allowed %q: error = %v", bad, err)
		}
	}

	if err := Write([]configs.MachineFile{{Path: "/var/x", Op: "create"}}, Options{Root: "relative"}); err == nil {
		t.Error("a relative root was accepted")
	}
}

// New parent directories are 0755 whatever the process umask, and an
// existing one is left alone.
func TestParentDirectories(t *testing.T) {
	old := syscall.Umask(0o077)
	t.Cleanup(func() { syscall.Umask(old) })

	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "var/lib"), 0o700); err != nil {
		t.Fatal(err)
	}

	if err := Write([]configs.MachineFile{{Path: "/var/lib/a/b/c.conf", Op: "create", Content: "c"}}, Options{Root: root}); err != nil {
		t.Fatal(err)
	}

	for p, want := range map[string]os.FileMode{"var/lib": 0o700, "var/lib/a": 0o755, "var/lib/a/b": 0o755} {
		fi, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}

		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s mode = %v, want %v", p, got, want)
		}
	}

	// A file where a directory is needed is reported, not replaced.
	err := Write([]configs.MachineFile{{Path: "/var/lib/a/b/c.conf/d", Op: "create"}}, Options{Root: root})
	if err == nil || !strings.Contains(err.Error(), "parent /var/lib/a/b/c.conf exists and is not a directory") {
		t.Errorf("error = %v", err)
	}
}

func TestSymlinksCannotEscape(t *testing.T) {
	for _, op := range []string{"create", "append", "overwrite"} {
		t.Run(op, func(t *testing.T) {
			root := t.TempDir()
			outside := t.TempDir()
			victim := filepath.Join(outside, "victim")

			if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
				t.Fatal(err)
			}

			mkdir(t, root, "var/lib/real")
			mkdir(t, root, "etc")
			symlink(t, outside, root, "var/abs")                                // absolute, out of the root
			symlink(t, "../../../"+filepath.Base(outside), root, "var/lib/rel") // relative, out of the root
			symlink(t, "../etc", root, "var/up")                                // inside the root, but out of /var
			symlink(t, victim, root, "var/file")                                // the file itself
			symlink(t, "real", root, "var/lib/inside")                          // stays in /var: fine

			// The relative link really points at outside, so a naive
			// write would land there.
			if _, err := os.Stat(filepath.Join(root, "var/lib/rel/victim")); err != nil {
				t.Fatalf("test setup: %v", err)
			}

			files := []configs.MachineFile{
				{Path: "/var/abs/victim", Op: op, Content: "pwned"},
				{Path: "/var/lib/rel/victim", Op: op, Content: "pwned"},
				{Path: "/var/lib/rel/new", Op: op, Content: "pwned"},
				{Path: "/var/up/passwd", Op: op, Content: "pwned"},
				{Path: "/var/file", Op: op, Content: "pwned"},
				{Path: "/var/lib/inside/ok", Op: op, Content: "ok"},
			}

			err := Write(files, Options{Root: root})
			if err == nil {
				t.Fatal("Write followed no link out and reported nothing")
			}

			msg := err.Error()
			for i := range 4 {
				if !strings.Contains(msg, fmt.Sprintf("machine.files[%d]", i)) {
					t.Errorf("machine.files[%d] was not refused:\n%s", i, msg)
				}
			}

			if strings.Contains(msg, "machine.files[5]") {
				t.Errorf("a link inside /var was refused:\n%s", msg)
			}

			if got, _ := readFile(t, victim); got != "precious" {
				t.Errorf("victim outside the root = %q", got)
			}

			entries, err := os.ReadDir(outside)
			if err != nil || len(entries) != 1 {
				t.Errorf("outside holds %v (%v), want only the victim", entries, err)
			}

			if _, err := os.Lstat(filepath.Join(root, "etc/passwd")); !os.IsNotExist(err) {
				t.Errorf("a write escaped /var into /etc (%v)", err)
			}

			if got, _ := readFile(t, filepath.Join(root, "var/lib/real/ok")); got != "ok" {
				t.Errorf("write through the inside link = %q", got)
			}

			// Overwrite and create replace the link itself, which is
			// safe; append must leave it as it was.
			fi, err := os.Lstat(filepath.Join(root, "var/file"))
			if err != nil {
				t.Fatal(err)
			}

			if isLink := fi.Mode()&os.ModeSymlink != 0; isLink == (op != "append") {
				t.Errorf("after %s, /var/file is a symlink: %v", op, isLink)
			}
		})
	}
}

func mkdir(t *testing.T, root, rel string) {
	t.Helper()

	if err := os.MkdirAll(filepath.Join(root, rel), 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, root, rel string) {
	t.Helper()

	if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
		t.Fatal(err)
	}
}
