package sysctl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// procTree builds a fake /proc/sys holding the given files.
func procTree(t *testing.T, files map[string]string) string {
	t.Helper()

	root := t.TempDir()

	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}

		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	return root
}

func TestPath(t *testing.T) {
	for _, tc := range []struct {
		key, want, err string
	}{
		{key: "net.ipv4.ip_forward", want: "/p/net/ipv4/ip_forward"},
		{key: "net/ipv4/conf/eth0.100/forwarding", want: "/p/net/ipv4/conf/eth0.100/forwarding"},
		{key: "kernel.pid_max", want: "/p/kernel/pid_max"},
		{key: "", err: "empty key"},
		{key: "net..ip_forward", err: `key "net..ip_forward" has an empty part`},
		{key: ".net.ipv4", err: "has an empty part"},
		{key: "net.ipv4.", err: "has an empty part"},
		{key: "/net/ipv4/ip_forward", err: "has an empty part"},
		{key: "net/ipv4/", err: "has an empty part"},
		{key: "net/../../etc/passwd", err: `has a ".." part`},
		{key: "../etc/passwd", err: `has a ".." part`},
		{key: "net/./ipv4", err: `has a "." part`},
	} {
		got, err := Path(tc.key, "/p")

		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Path(%q) error = %v, want it to contain %q", tc.key, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("Path(%q): %v", tc.key, err)
		case got != tc.want:
			t.Errorf("Path(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestApplyWritesValues(t *testing.T) {
	root := procTree(t, map[string]string{
		"net/ipv4/ip_forward":                 "0\n",
		"net/ipv4/conf/eth0.100/forwarding":   "0\n",
		"net/ipv4/ip_local_port_range":        "32768\t60999\n",
		"kernel/panic":                        "0\n",
		"vm/overcommit_memory":                "0\n",
		"net/core/somaxconn":                  "4096\n",
		"net/ipv6/conf/default/disable_ipv6":  "0\n",
		"net/ipv6/conf/all/accept_ra_defrtr":  "1\n",
		"fs/inotify/max_user_instances":       "128\n",
		"net/bridge/bridge-nf-call-iptables":  "0\n",
		"net/netfilter/nf_conntrack_max":      "65536\n",
		"kernel/keys/root_maxbytes":           "25000000\n",
		"net/ipv4/tcp_keepalive_time":         "7200\n",
		"net/ipv4/neigh/default/gc_thresh3":   "1024\n",
		"net/ipv4/conf/all/rp_filter":         "2\n",
		"net/ipv4/conf/all/src_valid_mark":    "0\n",
		"net/ipv4/conf/default/send_redirect": "1\n",
	})

	want := map[string]string{
		"net.ipv4.ip_forward":                 "1",
		"net/ipv4/conf/eth0.100/forwarding":   "1",
		"net.ipv4.ip_local_port_range":        "1024\t2048",
		"kernel.panic":                        "10",
		"net.bridge.bridge-nf-call-iptables":  "1",
		"fs.inotify.max_user_instances":       "8192",
		"net.netfilter.nf_conntrack_max":      "131072",
		"net.ipv4.conf.all.rp_filter":         "0",
		"net.ipv4.neigh.default.gc_thresh3":   "4096",
		"net.ipv4.tcp_keepalive_time":         "600",
		"net.ipv4.conf.default.send_redirect": "0",
		"net.ipv6.conf.all.accept_ra_defrtr":  "0",
		"net.ipv6.conf.default.disable_ipv6":  "1",
		"kernel.keys.root_maxbytes":           "1",
		"net.ipv4.conf.all.src_valid_mark":    "1",
		"vm.overcommit_memory":                "1",
		"net.core.somaxconn":                  "65535",
	}

	if err := Apply(want, root); err != nil {
		t.Fatalf("Apply: %v", err)
	}

	for k, v := range want {
		got, err := Read(k, root)
		if err != nil {
			t.Errorf("Read(%q): %v", k, err)
			continue
		}

		if got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}

	// A shorter value must not leave the tail of the old one behind.
	b, err := os.ReadFile(filepath.Join(root, "fs/inotify/max_user_instances"))
	if err != nil {
		t.Fatal(err)
	}

	if string(b) != "8192" {
		t.Errorf("file holds %q, want exactly %q", b, "8192")
	}
}

func TestApplyReportsEveryFailureInKeyOrder(t *testing.T) {
	root := procTree(t, map[string]string{
		"net/ipv4/ip_forward": "0\n",
		"vm/swappiness":       "60\n",
	})

	err := Apply(map[string]string{
		"vm.swappiness":       "10",
		"net.ipv4.nope":       "1",
		"net.ipv4.ip_forward": "1",
		"a..b":                "1",
		"net.ipv4":            "1", // a directory, not a value
		"../escape":           "1",
	}, root)
	if err == nil {
		t.Fatal("Apply succeeded with bad keys")
	}

	lines := strings.Split(err.Error(), "\n")
	wantPrefixes := []string{
		"sysctl ../escape: ",
		"sysctl a..b: key \"a..b\" has an empty part",
		"sysctl net.ipv4: open ",
		"sysctl net.ipv4.nope: no such key in this kernel",
	}

	if len(lines) != len(wantPrefixes) {
		t.Fatalf("got %d errors, want %d:\n%v", len(lines), len(wantPrefixes), err)
	}

	for i, p := range wantPrefixes {
		if !strings.HasPrefix(lines[i], p) {
			t.Errorf("error %d = %q, want prefix %q", i, lines[i], p)
		}
	}

	// The good keys are written in spite of the bad ones.
	for k, v := range map[string]string{"vm.swappiness": "10", "net.ipv4.ip_forward": "1"} {
		if got, err := Read(k, root); err != nil || got != v {
			t.Errorf("Read(%q) = %q, %v; want %q", k, got, err, v)
		}
	}

	if _, err := os.Stat(filepath.Join(root, "net/ipv4/nope")); !os.IsNotExist(err) {
		t.Errorf("an unknown key created a file: stat error %v", err)
	}
}

func TestReadErrors(t *testing.T) {
	root := procTree(t, map[string]string{"kernel/ostype": "Linux\n"})

	for _, key := range []string{"kernel.nope", "kernel..ostype", "kernel/../kernel/ostype"} {
		if got, err := Read(key, root); err == nil {
			t.Errorf("Read(%q) = %q, want an error", key, got)
		}
	}
}

func TestReadRealProcSys(t *testing.T) {
	got, err := Read("kernel.ostype", DefaultProcSys)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}

	if got != "Linux" {
		t.Errorf("kernel.ostype = %q, want %q", got, "Linux")
	}

	// Both spellings name the same file.
	slashed, err := Read("kernel/ostype", DefaultProcSys)
	if err != nil || slashed != got {
		t.Errorf("Read(kernel/ostype) = %q, %v; want %q", slashed, err, got)
	}
}
