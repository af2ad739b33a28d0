package configs_test

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

func TestParseQuantity(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		in   string
		want *big.Rat // nil: refused
	}{
		{"250m", big.NewRat(1, 4)},
		{"1.5", big.NewRat(3, 2)},
		{"512Mi", big.NewRat(512<<20, 1)},
		{"2G", big.NewRat(2_000_000_000, 1)},
		{"1e3", big.NewRat(1000, 1)},
		{"5E-1", big.NewRat(1, 2)},
		{"-1Mi", big.NewRat(-1<<20, 1)},
		{"", nil}, {"lots", nil}, {"1Gb", nil}, {"1.2.3", nil}, {"Mi", nil}, {"1e99", nil}, {".", nil},
	} {
		got, err := configs.ParseQuantity(tc.in)

		switch {
		case tc.want == nil && err == nil:
			t.Errorf("%q: accepted as %v", tc.in, got)
		case tc.want != nil && (err != nil || got.Cmp(tc.want) != 0):
			t.Errorf("%q: %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func TestKubeVersionOfImage(t *testing.T) {
	t.Parallel()

	for ref, want := range map[string]string{
		"registry.k8s.io/kube-apiserver:v1.34.12":               "1.34.12",
		"localhost:5000/kubelet:v1.33.0-custom.1":               "1.33.0",
		"ghcr.io/siderolabs/kubelet:v1.34.12@sha256:" + hex64(): "1.34.12",
		"registry.k8s.io/kube-apiserver":                        "",
		"registry.k8s.io/kube-apiserver:latest":                 "",
		"registry.k8s.io/kube-apiserver:v1.34":                  "",
		"localhost:5000/kube-apiserver":                         "",
		"registry.k8s.io/kube-apiserver:v01.34.1":               "",
	} {
		v, err := configs.KubeVersionOfImage(ref)

		switch {
		case want == "" && err == nil:
			t.Errorf("%s: read as %s", ref, v)
		case want != "" && (err != nil || v.String() != want):
			t.Errorf("%s: %v, %v; want %s", ref, v, err, want)
		}
	}
}

func hex64() string {
	b := make([]byte, 64)
	for i := range b {
		b[i] = "0123456789abcdef"[i%16]
	}

	return string(b)
}

func TestPartitionSize(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]uint64{"": 0, "0": 0, " 0 ": 0, "1": 1 << 20, "1MiB": 1 << 20, "1.5MB": 2 << 20, "10 GiB": 10 << 30, "100 GB": 95368 << 20} {
		if got, err := configs.PartitionSize(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}

	for _, in := range []string{"lots", "-1", "5 EiB", "100EB", "18446744073709551615"} {
		if got, err := configs.PartitionSize(in); err == nil {
			t.Errorf("%q: accepted as %d", in, got)
		}
	}
}

func TestMachineFilePlace(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ path, dir, name string }{
		{"/var/lib/x.conf", "/var", "lib/x.conf"},
		{"/var//lib/./x", "/var", "lib/x"},
		{"/etc/cri/conf.d/20-customization.part", "/etc/cri/conf.d", "20-customization.part"},
		{"/etc/cri/conf.d/hosts/docker.io/hosts.toml", "/etc/cri/conf.d/hosts", "docker.io/hosts.toml"},
		{"/etc/motd", "", ""}, {"/var", "", ""}, {"/var/", "", ""}, {"var/x", "", ""}, {"/var/../etc/x", "", ""}, {"", "", ""}, {"/var/a\nb", "", ""},
	} {
		dir, name, err := configs.MachineFilePlace(tc.path, nil)

		switch {
		case tc.dir == "" && err == nil:
			t.Errorf("%q: placed at %s %s", tc.path, dir, name)
		case tc.dir != "" && (err != nil || dir != tc.dir || name != tc.name):
			t.Errorf("%q: %s %s %v; want %s %s", tc.path, dir, name, err, tc.dir, tc.name)
		}
	}
}

func TestParseEtcdArg(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		key, value string
		flag       string
		val        any
		err        error
	}{
		{key: "snapshot-count", value: "5000", flag: "snapshot-count", val: uint64(5000)},
		{key: "--election-timeout", value: "500", flag: "election-timeout", val: uint64(500)},
		{key: "experimental-corrupt-check-time", value: "3m", flag: "corrupt-check-time", val: 3 * time.Minute},
		{key: "experimental-initial-corrupt-check", value: "true", flag: "feature-gates", val: map[string]bool{"InitialCorruptCheck": true}},
		{key: "feature-gates", value: "CompactHashCheck=true, LeaseCheckpoint=false", flag: "feature-gates", val: map[string]bool{"CompactHashCheck": true, "LeaseCheckpoint": false}},
		{key: "data-dir", value: "/x", err: configs.ErrEtcdArgOwned},
		{key: "frobnicate", value: "1", err: configs.ErrEtcdArgUnknown},
		{key: "max-concurrent-streams", value: "4294967296"},
		{key: "auto-compaction-mode", value: "hourly"},
		{key: "listen-metrics-urls", value: "http://0.0.0.0"},
	} {
		got, err := configs.ParseEtcdArg(tc.key, tc.value)

		switch {
		case tc.flag == "" && err == nil:
			t.Errorf("%s=%s: accepted as %+v", tc.key, tc.value, got)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s=%s: %v, want %v", tc.key, tc.value, err, tc.err)
		case tc.flag != "" && (err != nil || got.Flag != tc.flag || !equal(got.Value, tc.val)):
			t.Errorf("%s=%s: %+v, %v; want %s %v", tc.key, tc.value, got, err, tc.flag, tc.val)
		}
	}
}

func equal(a, b any) bool {
	am, aok := a.(map[string]bool)
	bm, bok := b.(map[string]bool)

	if aok && bok {
		if len(am) != len(bm) {
			return false
		}

		for k, v := range am {
			if bm[k] != v {
				return false
			}
		}

		return true
	}

	return a == b
}

func TestFilterAddrs(t *testing.T) {
	t.Parallel()

	addrs := []netip.Addr{netip.MustParseAddr("10.5.0.2"), netip.MustParseAddr("10.5.0.10"), netip.MustParseAddr("fd00::2"), netip.MustParseAddr("::ffff:192.168.1.5")}

	for _, tc := range []struct {
		subnets []string
		want    string
	}{
		{nil, "[10.5.0.2 10.5.0.10 fd00::2 192.168.1.5]"},
		{[]string{"10.5.0.0/24"}, "[10.5.0.2 10.5.0.10]"},
		{[]string{"10.5.0.0/24", "!10.5.0.10"}, "[10.5.0.2]"},
		{[]string{"!10.0.0.0/8"}, "[fd00::2 192.168.1.5]"},
		{[]string{"fd00::/8", " 192.168.1.5 "}, "[fd00::2 192.168.1.5]"},
	} {
		got, err := configs.FilterAddrs(addrs, tc.subnets)
		if err != nil || fmt.Sprint(got) != tc.want {
			t.Errorf("%q: %v, %v; want %s", tc.subnets, got, err, tc.want)
		}
	}

	if _, err := configs.FilterAddrs(addrs, []string{"10.5.0.0/33"}); err == nil {
		t.Error("a bad subnet was taken")
	}
}

func TestDecodeBase64(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]string{
		"aGk/Pz4+":  "hi??>>",
		"aGk_Pz4-":  "hi??>>",
		"aGk/Pz4":   "hi??>",
		"aGk_Pz4":   "hi??>",
		"aGk=":      "hi",
		"aGk":       "hi",
		"aGk_Pz4+":  "", // both alphabets
		"not base!": "",
	} {
		got, err := configs.DecodeBase64(in)

		switch {
		case want == "" && err == nil:
			t.Errorf("%q: decoded as %q", in, got)
		case want != "" && (err != nil || string(got) != want):
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestMachineTypeOf(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]string{"join": "worker", "worker": "worker", "controlplane": "controlplane", "init": "init", "x": "x"} {
		if got := configs.MachineTypeOf(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
