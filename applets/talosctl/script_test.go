package talosctl_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/talosbox/talosbox/applets/talosctl"
	"github.com/talosbox/talosbox/internal/applet"
)

// TestMain lets testscript run talosctl as a real command inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"talosctl": func() {
			os.Exit(talosctl.Main(context.Background(), os.Args[1:], applet.OSEnv()))
		},
	})
}

// TestScripts runs testdata/script/*.txtar: CLI behaviour where the exact
// output and the files left behind matter.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"perm": checkPerm,
		},
	})
}

// checkPerm: perm FILE MODE asserts a file's permission bits (octal).
func checkPerm(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: perm FILE MODE")
	}

	want, err := strconv.ParseUint(args[1], 8, 32)
	ts.Check(err)

	fi, err := os.Stat(ts.MkAbs(args[0]))
	ts.Check(err)

	got := uint64(fi.Mode().Perm())
	if (got == want) == neg {
		ts.Fatalf("%s has mode %s, want %s%s", args[0], fmt.Sprintf("%#o", got), map[bool]string{true: "not ", false: ""}[neg], args[1])
	}
}
