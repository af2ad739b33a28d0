package configs_test

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

// TestLoadNamesLines: Load locates validation problems by line, as decode
// errors are, down to keys in free-form sections.
func TestLoadNamesLines(t *testing.T) {
	t.Parallel()

	base, err := os.ReadFile("testdata/full/minimal-controlplane.yaml")
	if err != nil {
		t.Fatal(err)
	}

	text := strings.Replace(string(base), "    install:\n", `    files:
        - path: /etc/motd
          op: create
          content: hi
    kubelet:
        extraConfig:
            staticPodPath: /srv
    install:
        extraKernelArgs: ["a=$b"]
`, 1)

	lineOf := func(needle string) int {
		for i, l := range strings.Split(text, "\n") {
			if strings.Contains(l, needle) {
				return i + 1
			}
		}

		t.Fatalf("%q not in the config", needle)

		return 0
	}

	_, _, err = configs.Load([]byte(text), configs.ModeMetal)
	if err == nil {
		t.Fatal("Load accepted the config")
	}

	for _, want := range []string{
		"line " + itoa(lineOf("path: /etc/motd")) + `: machine.files[0].path: path "/etc/motd" is not writable`,
		"line " + itoa(lineOf("staticPodPath")) + `: machine.kubelet.extraConfig.staticPodPath: kubelet configuration field "staticPodPath" can't be overridden`,
		"line " + itoa(lineOf("extraKernelArgs")) + `: machine.install.extraKernelArgs[0]: a kernel argument cannot hold "$"`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}

	// A default that was never written is located at its section.
	text = strings.Replace(string(base), "    token: 0bo6ps.3rj4mbwv6ixvtd5l\n", "    token: 0bo6ps.3rj4mbwv6ixvtd5l\n    discovery: {enabled: true}\n", 1)

	_, _, err = configs.Load([]byte(text), configs.ModeMetal)
	if want := "line " + itoa(lineOf("clusterName:")-1) + ": cluster.id: cluster discovery service requires .cluster.id"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error does not say %q:\n%v", want, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestDecodeText: what YAML itself reports without a line gets one.
func TestDecodeText(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		name, text, want string
	}{
		{"NUL byte", "version: v1alpha1\nmachine:\n  type: wor\x00ker\n", `line 3: the config contains a NUL byte (\x00): a config is UTF-8 text`},
		{"invalid UTF-8", "version: v1alpha1\ndebug: false\nmachine:\n  type: w\xffrker\n", "line 4: invalid UTF-8 (byte 0xff): a config is UTF-8 text; binary values go in base64"},
		{"only empty documents", "---\n# nothing\n---\n", "line 3: config is empty"},
		{"UTF-16LE", utf16("\ufeffversion: v1alpha1\n", false), "line 1: the config is UTF-16 text (byte order mark FF FE, little-endian): save it as UTF-8"},
		{"UTF-16BE", utf16("\ufeffversion: v1alpha1\n", true), "line 1: the config is UTF-16 text (byte order mark FE FF, big-endian): save it as UTF-8"},
		{"UTF-16 without a byte order mark", utf16("version: v1alpha1\n", false), "line 1: the config looks like UTF-16 text without a byte order mark (every other byte is NUL): save it as UTF-8"},
	} {
		_, err := configs.Decode([]byte(tc.text))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}

	// An empty document before the config is skipped, as Talos skips it.
	base, err := os.ReadFile("testdata/full/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := configs.Decode(append([]byte("---\n# generated\n---\n"), base...))
	if err != nil || cfg.Machine == nil || cfg.Machine.Type != "worker" {
		t.Fatalf("leading empty document: %v", err)
	}

	// A UTF-8 byte order mark (Windows editors write one) is no problem,
	// and lines are still counted from the first.
	for _, text := range [][]byte{append([]byte("\ufeff"), base...), append([]byte("\ufeff---\n"), base...)} {
		cfg, pos, err := configs.DecodeWithPositions(text)
		if err != nil || cfg.Machine == nil || cfg.Machine.Type != "worker" {
			t.Fatalf("UTF-8 byte order mark: %v", err)
		}

		if want := bytes.Count(text[:bytes.Index(text, []byte("machine:"))], []byte("\n")) + 1; pos.Line("machine") != want {
			t.Errorf("UTF-8 byte order mark: machine is on line %d, want %d", pos.Line("machine"), want)
		}
	}
}

// utf16 encodes ASCII and U+FEFF as UTF-16.
func utf16(s string, bigEndian bool) string {
	var out []byte

	for _, r := range s {
		hi, lo := byte(r>>8), byte(r)
		if bigEndian {
			out = append(out, hi, lo)
		} else {
			out = append(out, lo, hi)
		}
	}

	return string(out)
}
