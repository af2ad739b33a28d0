package cgroups_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/talosbox/talosbox/internal/cgroups"
)

// hierarchy tars files as a node's Copy of /sys/fs/cgroup does.
func hierarchy(t *testing.T, files map[string]string) *bytes.Buffer {
	t.Helper()

	var buf bytes.Buffer

	tw := tar.NewWriter(&buf)

	for name, data := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}

		if _, err := tw.Write([]byte(data)); err != nil {
			t.Fatal(err)
		}
	}

	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}

	return &buf
}

func TestPresets(t *testing.T) {
	tr := hierarchy(t, map[string]string{
		"cgroup.controllers":           "cpu memory pids io\n",
		"cgroup.procs":                 "1\n",
		"cpu.stat":                     "usage_usec 3000000\nuser_usec 2000000\nsystem_usec 1000000\n",
		"memory.current":               "1073741824\n",
		"system/cgroup.procs":          "10\n11\n",
		"system/cgroup.threads":        "10\n11\n12\n",
		"system/cpu.stat":              "user_usec 500000\nsystem_usec 250000\nthrottled_usec 0\n",
		"system/cpu.weight":            "100\n",
		"system/memory.current":        "268435456\n",
		"system/memory.peak":           "536870912\n",
		"system/memory.max":            "max\n",
		"system/memory.min":            "134217728\n",
		"system/pids.current":          "2\n",
		"system/pids.max":              "max\n",
		"system/io.pressure":           "some avg10=1.50 avg60=0.75 avg300=0.10 total=2500000\nfull avg10=0.50 avg60=0.25 avg300=0.00 total=1000\n",
		"system/io.stat":               "8:0 rbytes=1048576 wbytes=2097152 rios=10 wios=20 dbytes=0 dios=0\n",
		"kubepods/cgroup.procs":        "",
		"kubepods/besteffort/cpu.stat": "user_usec 100\n",
	})

	root, err := cgroups.FromTar(tr, "")
	if err != nil {
		t.Fatal(err)
	}

	procs := map[string]string{"10": "machined", "11": "containerd"}

	for _, tc := range []struct {
		preset string
		want   []string
	}{
		{"cpu", []string{
			"NAME  CpuWeight  CpuNice  CpuMax  CpuUser  User/%  CpuSystem  System/%  Throttled",
			". - - - 2s - 1s - -",
			"└─kubepods - - - - - - - -",
			"└─besteffort - - - 0s - - - -",
			"└─system 100 - - 500ms 25.00% 250ms 25.00% 0s",
		}},
		{"memory", []string{
			"└─system 256 MiB 512 MiB - - - 128 MiB 200.00% max",
		}},
		{"process", []string{
			"└─system 2 - max 2 3 machined,containerd",
		}},
		{"io", []string{
			"└─system 8:0: 1.0 MiB/2.0 MiB 8:0: 10/20 1.50 0.75 2.5s",
		}},
		{"psi", []string{
			"└─system 256 MiB - - - 0.50",
		}},
	} {
		t.Run(tc.preset, func(t *testing.T) {
			var buf bytes.Buffer

			w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
			cgroups.Print(w, root, cgroups.Presets[tc.preset], procs)
			w.Flush()

			// Compare words, not the table's padding.
			got := map[string]bool{}
			for _, line := range strings.Split(buf.String(), "\n") {
				got[strings.Join(strings.Fields(line), " ")] = true
			}

			for _, line := range tc.want {
				if !got[strings.Join(strings.Fields(line), " ")] {
					t.Errorf("no row %q in:\n%s", line, buf.String())
				}
			}

			if strings.Index(buf.String(), "└─kubepods") > strings.Index(buf.String(), "  └─besteffort") {
				t.Errorf("children are not under their parent:\n%s", buf.String())
			}
		})
	}
}

func TestFromTarRefusesV1(t *testing.T) {
	_, err := cgroups.FromTar(hierarchy(t, map[string]string{"memory/memory.usage_in_bytes": "1\n"}), "")
	if !errors.Is(err, cgroups.ErrNotV2) {
		t.Fatalf("a v1 hierarchy: %v, want ErrNotV2", err)
	}

	if _, err := cgroups.FromTar(strings.NewReader("not a tar archive, long enough to have a header block in it......"), ""); err == nil {
		t.Fatal("garbage read as a hierarchy")
	}
}

// TestFromTarOfCopy reads an archive shaped as the node's Copy of
// /sys/fs/cgroup makes it: every name under "cgroup/".
func TestFromTarOfCopy(t *testing.T) {
	root, err := cgroups.FromTar(hierarchy(t, map[string]string{
		"cgroup/cgroup.controllers": "memory\n", "cgroup/init/memory.current": "4096\n", "other/file": "x",
	}), "cgroup")
	if err != nil {
		t.Fatal(err)
	}

	if len(root.Children) != 1 || root.Children[0].Name != "init" || root.Children[0].Value("memory.current") != "4096" {
		t.Fatalf("tree: %+v", root.Children)
	}
}
