package nocloud

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/disk"
	"github.com/talosbox/talosbox/internal/fat"
)

// seed makes a NoCloud seed as its users do, with xorriso's mkisofs
// (Rock Ridge and Joliet names), from files.
func seed(t *testing.T, label string, files map[string]string) string {
	t.Helper()

	dir := t.TempDir()
	src := filepath.Join(dir, "src")

	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(src, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	iso := filepath.Join(dir, "seed.iso")
	if out, err := exec.Command("xorriso", "-as", "mkisofs", "-o", iso, "-V", label, "-J", "-r", src).CombinedOutput(); err != nil {
		t.Fatalf("xorriso -as mkisofs (apt-get install xorriso): %v\n%s", err, out)
	}

	return iso
}

func dev(t *testing.T, path string) disk.BlockDevice {
	t.Helper()

	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}

	return disk.BlockDevice{Name: filepath.Base(path), Path: path, Size: st.Size()}
}

func TestRead(t *testing.T) {
	files := map[string]string{
		"user-data":      "version: v1alpha1\nmachine:\n  type: controlplane\n",
		"meta-data":      "instance-id: i-1\nlocal-hostname: node-1\n",
		"network-config": "version: 2\nethernets:\n  eth0:\n    addresses: [10.0.2.20/24]\n",
	}

	other := seed(t, "OTHER", map[string]string{"x": "y"})
	good := seed(t, "CIDATA", files) // cloud-init matches the label in any case

	d, err := Read([]disk.BlockDevice{{Name: "gone", Path: "/nonexistent"}, dev(t, other), dev(t, good)})
	if err != nil {
		t.Fatal(err)
	}

	if d.Device != good || string(d.UserData) != files["user-data"] || string(d.MetaData) != files["meta-data"] ||
		string(d.NetworkConfig) != files["network-config"] {
		t.Errorf("Read: %+v", d)
	}

	// Only user-data is required.
	d, err = Read([]disk.BlockDevice{dev(t, seed(t, "cidata", map[string]string{"user-data": "x: 1\n"}))})
	if err != nil || d.MetaData != nil || d.NetworkConfig != nil || string(d.UserData) != "x: 1\n" {
		t.Errorf("a seed with user-data alone: %+v, %v", d, err)
	}
}

func TestReadRefuses(t *testing.T) {
	vfat := filepath.Join(t.TempDir(), "vfat.img")

	img, err := fat.Render(4<<20, []fat.File{{Path: "USER-DAT", Data: []byte("x")}}, fat.Options{Label: "CIDATA"})
	if err != nil {
		t.Fatal(err)
	}

	if err := os.WriteFile(vfat, append(img, make([]byte, 4<<20-len(img))...), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		devs []disk.BlockDevice
		want string
	}{
		{"no seed", []disk.BlockDevice{dev(t, seed(t, "OTHER", map[string]string{"user-data": "x"}))}, "no NoCloud seed"},
		{"none of its files", []disk.BlockDevice{dev(t, seed(t, "cidata", map[string]string{"user_data": "x: 1\n"}))}, "the seed has none of user-data, meta-data and network-config"},
		{"a vfat seed", []disk.BlockDevice{dev(t, vfat)}, "is a vfat seed: only ISO 9660 seeds are read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Read(tc.devs); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadLargeUserData(t *testing.T) {
	big := strings.Repeat("# padding\n", 200000) // 2 MB: many ISO blocks
	d, err := Read([]disk.BlockDevice{dev(t, seed(t, "cidata", map[string]string{"user-data": big}))})

	if err != nil || !bytes.Equal(d.UserData, []byte(big)) {
		t.Errorf("a 2 MB user-data: %v, %d bytes", err, len(d.UserData))
	}
}

// A seed with only network-config gives the network; the config comes by
// apply-config --insecure.
func TestReadNetworkOnly(t *testing.T) {
	d, err := Read([]disk.BlockDevice{dev(t, seed(t, "cidata", map[string]string{"network-config": "version: 2\n"}))})
	if err != nil || d.UserData != nil || string(d.NetworkConfig) != "version: 2\n" {
		t.Errorf("a seed with network-config alone: %+v, %v", d, err)
	}
}

func TestParseDS(t *testing.T) {
	for _, tc := range []struct {
		in     string
		want   DS
		ok     bool
		errSub string
	}{
		{in: "ds=nocloud-net;s=http://10.10.0.1/configs/;h=node-1", want: DS{SeedFrom: "http://10.10.0.1/configs/", Hostname: "node-1"}, ok: true},
		{in: "ds=nocloud;seedfrom=https://seed.example/a;local-hostname=x;i=iid-1\n", want: DS{SeedFrom: "https://seed.example/a/", Hostname: "x", InstanceID: "iid-1"}, ok: true},
		{in: "Not Specified"},
		{in: "ds=ec2;s=http://x/"},
		{in: "ds=nocloud-net;h=node", ok: true, errSub: "names no seed URL"},
		{in: "ds=nocloud-net;s=file:///seed/", ok: true, errSub: "must be http(s)"},
	} {
		got, ok, err := ParseDS(tc.in)
		if ok != tc.ok || got != tc.want || (err == nil) != (tc.errSub == "") || (err != nil && !strings.Contains(err.Error(), tc.errSub)) {
			t.Errorf("ParseDS(%q) = %+v, %v, %v; want %+v, %v, %q", tc.in, got, ok, err, tc.want, tc.ok, tc.errSub)
		}
	}
}

// The seed's files over HTTP: present, absent (nil), a server error
// retried until it answers, a client error not retried.
func TestDSFetch(t *testing.T) {
	var fails atomic.Int32

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/seed/user-data":
			if fails.Add(1) <= 2 {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}

			io.WriteString(w, "version: v1alpha1\n") //nolint:errcheck // the test reads it back
		case "/seed/meta-data":
			io.WriteString(w, "") //nolint:errcheck // an empty file
		case "/seed/forbidden":
			http.Error(w, "no", http.StatusForbidden)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	ds, _, err := ParseDS("ds=nocloud-net;s=" + srv.URL + "/seed")
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if b, err := ds.Fetch(ctx, "user-data"); err != nil || string(b) != "version: v1alpha1\n" || fails.Load() != 3 {
		t.Errorf("user-data: %q, %v after %d tries", b, err, fails.Load())
	}

	if b, err := ds.Fetch(ctx, "meta-data"); err != nil || b == nil || len(b) != 0 {
		t.Errorf("an empty meta-data: %q (nil %v), %v", b, b == nil, err)
	}

	if b, err := ds.Fetch(ctx, "network-config"); err != nil || b != nil {
		t.Errorf("a missing network-config: %q, %v; want nil", b, err)
	}

	if _, err := ds.Fetch(ctx, "forbidden"); err == nil || !strings.Contains(err.Error(), "403") {
		t.Errorf("a 403: %v", err)
	}
}
