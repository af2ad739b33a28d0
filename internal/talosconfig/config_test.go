package talosconfig

import (
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]

		return v, ok
	}
}

func TestResolvePath(t *testing.T) {
	tests := []struct {
		name, flag string
		env        map[string]string
		want, err  string
	}{
		{"flag wins", "/x/flag", map[string]string{"TALOSCONFIG": "/x/env", "HOME": "/home/u"}, "/x/flag", ""},
		{"env next", "", map[string]string{"TALOSCONFIG": "/x/env", "HOME": "/home/u"}, "/x/env", ""},
		{"empty env ignored", "", map[string]string{"TALOSCONFIG": "", "HOME": "/home/u"}, "/home/u/.talos/config", ""},
		{"home default", "", map[string]string{"HOME": "/home/u"}, "/home/u/.talos/config", ""},
		{"nothing", "", map[string]string{}, "", "$TALOSCONFIG and $HOME are all unset"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolvePath(tt.flag, env(tt.env))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error = %v, want %q", err, tt.err)
				}

				return
			}

			if err != nil || got != tt.want {
				t.Fatalf("ResolvePath = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

const talosFile = `context: prod
contexts:
    prod:
        endpoints:
            - 10.0.0.2
        nodes:
            - 10.0.0.2
            - 10.0.0.3
        ca: Y2E=
        crt: Y3J0
        key: a2V5
    legacy:
        target: 192.168.1.1
        auth:
            siderov1:
                identity: me@example.org
`

func TestParseAndBytes(t *testing.T) {
	c, err := Parse([]byte(talosFile))
	if err != nil {
		t.Fatal(err)
	}

	if c.Context != "prod" || !slices.Equal(c.Contexts["prod"].Nodes, []string{"10.0.0.2", "10.0.0.3"}) {
		t.Errorf("parsed %+v", c)
	}

	if got := c.Contexts["legacy"].Endpoints; !slices.Equal(got, []string{"192.168.1.1"}) {
		t.Errorf("legacy target not folded into endpoints: %v", got)
	}

	out, err := c.Bytes()
	if err != nil {
		t.Fatal(err)
	}

	want := `context: prod
contexts:
    legacy:
        endpoints:
            - 192.168.1.1
        auth:
            siderov1:
                identity: me@example.org
    prod:
        endpoints:
            - 10.0.0.2
        nodes:
            - 10.0.0.2
            - 10.0.0.3
        ca: Y2E=
        crt: Y3J0
        key: a2V5
`
	if string(out) != want {
		t.Errorf("Bytes:\n%s\nwant:\n%s", out, want)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"malformed", "context: a\ncontexts:\n  a: [\n", "parse talosconfig: yaml: line 3"},
		{"unknown field", "context: a\ncontexts:\n  a:\n    endpoint: [x]\n", "line 4: field endpoint not found"},
		{"wrong type", "context: [a]\n", "line 1: cannot unmarshal !!seq into string"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()

	c, err := Load(filepath.Join(dir, "missing"))
	if err != nil || c.Context != "" || c.Contexts == nil || len(c.Contexts) != 0 {
		t.Fatalf("missing file: %+v, %v", c, err)
	}

	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	if c, err := Load(empty); err != nil || c.Contexts == nil {
		t.Fatalf("empty file: %+v, %v", c, err)
	}

	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("contexts: {\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	if _, err := Load(bad); err == nil || !strings.Contains(err.Error(), bad+": parse talosconfig") {
		t.Fatalf("malformed file error = %v", err)
	}

	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "read talosconfig") {
		t.Fatalf("directory error = %v", err)
	}
}

func TestSave(t *testing.T) {
	path := filepath.Join(t.TempDir(), "home", ".talos", "config")

	c, err := Parse([]byte(talosFile))
	if err != nil {
		t.Fatal(err)
	}

	if err := c.Save(path); err != nil {
		t.Fatal(err)
	}

	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	di, err := os.Stat(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}

	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes: file %v dir %v, want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
	}

	back, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}

	if back.Context != "prod" || back.Contexts["prod"].Key != "a2V5" {
		t.Errorf("reloaded %+v", back)
	}

	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	if err := c.Save(filepath.Join(blocker, "config")); err == nil {
		t.Error("saving below a regular file succeeded")
	}
}

// TestSaveFailureKeepsOldFile makes the write itself fail half way (file
// size limit, which applies even to root) and checks that the previous
// talosconfig is untouched and no temp file is left.
func TestSaveFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	old := New("old", []string{"1.2.3.4"}, []byte("ca"), nil)

	if err := old.Save(path); err != nil {
		t.Fatal(err)
	}

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	big := New("big", []string{"1.2.3.4"}, make([]byte, 64<<10), nil)

	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}

	signal.Ignore(syscall.SIGXFSZ) // report EFBIG instead of killing the test
	defer signal.Reset(syscall.SIGXFSZ)

	limited := lim
	limited.Cur = 4 << 10

	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limited); err != nil {
		t.Fatal(err)
	}

	saveErr := big.Save(path)

	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}

	if saveErr == nil || !strings.Contains(saveErr.Error(), "file too large") {
		t.Fatalf("Save error = %v, want file too large", saveErr)
	}

	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	if string(after) != string(before) {
		t.Errorf("old file changed:\n%s", after)
	}

	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want 1 (temp file left behind)", len(entries))
	}
}
