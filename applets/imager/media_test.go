package imager

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/applet"
)

func run(t *testing.T, args ...string) (int, string) {
	t.Helper()

	var out bytes.Buffer

	code := Main(context.Background(), args, applet.Env{Stdout: &out, Stderr: &out})

	return code, out.String()
}

func TestMediaFlags(t *testing.T) {
	kdir := t.TempDir() // holds no kernel package

	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"iso", "--help"}, 0, "a hybrid ISO that boots on BIOS and UEFI"},
		{[]string{"pxe", "--help"}, 0, "-base-url URL"},
		{[]string{"metal", "--help"}, 0, "grows EPHEMERAL to the end of the disk"},
		{[]string{"metal", "--kernel-dir", kdir}, 1, "imager metal: "},
		{[]string{"iso", "--epoch", "yesterday"}, 2, `--epoch: "yesterday" is not Unix seconds`},
		{[]string{"pxe", "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"iso", "--platform", "aws"}, 2, `--platform "aws": metal or nocloud`},
		{[]string{"iso", "--kernel-dir", kdir}, 1, "imager iso: "},
	} {
		code, out := run(t, tc.args...)
		if code != tc.code || !strings.Contains(out, tc.want) {
			t.Errorf("imager %s: exit %d, want %d with %q:\n%s", strings.Join(tc.args, " "), code, tc.code, tc.want, out)
		}
	}

	for _, p := range []string{"talosbox-amd64.iso", "metal-amd64.raw.zst"} {
		if _, err := os.Stat(filepath.Join("_out", p)); err == nil {
			t.Errorf("a failed build left %s behind", p)
		}
	}
}

func TestEpochAndArgs(t *testing.T) {
	if got, err := epochTime("1764374400"); err != nil || !got.Equal(time.Date(2025, 11, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("epochTime: %v, %v", got, err)
	}

	var l argList
	for _, v := range []string{"console=ttyS0,115200", "a=1 b=2"} {
		if err := l.Set(v); err != nil {
			t.Fatal(err)
		}
	}

	if got := l.String(); got != "console=ttyS0,115200 a=1 b=2" {
		t.Errorf("--extra-kernel-arg twice: %q (a comma must stay inside its argument)", got)
	}
}

func TestEmbeddedConfigRefusesABrokenOne(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(p, []byte("version: v1alpha1\nmachine:\n  tpye: worker\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	code, out := run(t, "pxe", "--embedded-config-path", p, "--out", t.TempDir())
	if code != 1 || !strings.Contains(out, "--embedded-config-path: "+p) || !strings.Contains(out, "tpye") {
		t.Errorf("a config with an unknown field: exit %d:\n%s", code, out)
	}
}
