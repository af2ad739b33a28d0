package applet_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/applet"
)

func TestFlags(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		code   int
		done   bool
		stdout string
		stderr string
	}{
		{nil, 0, false, "", ""},
		{[]string{"--name", "x"}, 0, false, "", ""},
		{[]string{"--help"}, 0, true, "", "Usage: demo\n"},
		{[]string{"--version"}, 0, true, "demo v", ""},
		{[]string{"--bogus"}, 2, true, "", "flag provided but not defined: -bogus"},
	} {
		var out, errOut bytes.Buffer

		fs := applet.NewFlags("demo", "Usage: demo\n", applet.Env{Stdout: &out, Stderr: &errOut})
		name := fs.String("name", "", "a name")

		code, done := fs.Parse(tt.args)
		if code != tt.code || done != tt.done {
			t.Errorf("%v: code %d done %v, want %d %v", tt.args, code, done, tt.code, tt.done)
		}

		if !strings.Contains(out.String(), tt.stdout) || !strings.Contains(errOut.String(), tt.stderr) {
			t.Errorf("%v: stdout %q stderr %q", tt.args, out.String(), errOut.String())
		}

		if len(tt.args) == 2 && *name != "x" {
			t.Errorf("--name not parsed: %q", *name)
		}
	}
}

func TestList(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, ""},
		{[]string{"--x", "a"}, "a"},
		{[]string{"--x", "a,b", "--x", "c"}, "a,b,c"},
		{[]string{"--x", " a , ,b,"}, "a,b"},
	} {
		var l applet.List

		fs := applet.NewFlags("demo", "", applet.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
		fs.Var(&l, "x", "a list")

		if code, done := fs.Parse(tt.args); done || code != 0 {
			t.Fatalf("%v: parse %d %v", tt.args, code, done)
		}

		if got := l.String(); got != tt.want {
			t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
		}
	}
}
