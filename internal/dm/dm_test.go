package dm

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// needRoot: Create makes /dev/mapper nodes with mknod.
func needRoot(t *testing.T) {
	t.Helper()

	if os.Geteuid() != 0 {
		t.Skip("mknod needs root")
	}
}

func testKey() []byte { return bytes.Repeat([]byte{0xa5, 0x5a}, 32) }

func TestCreateStatusTableListRemove(t *testing.T) {
	needRoot(t)

	k := newFake(t)
	key := testKey()
	hexKey := fmt.Sprintf("%x", key)
	tg := CryptTarget(0, 2048, "aes-xts-plain64", key, 0, "8:0", 32768, 4096)

	d, err := Create("vol", "CRYPT-LUKS2-1234-vol", []Target{tg}, 0)
	if err != nil {
		t.Fatal(err)
	}

	if want := []uint{unix.DM_DEV_CREATE, unix.DM_TABLE_LOAD, unix.DM_DEV_SUSPEND}; !slices.Equal(k.calls, want) {
		t.Errorf("commands %#x, want %#x", k.calls, want)
	}

	// The kernel got the key, marked secure, and nothing here keeps it.
	if len(k.loads) != 1 || !bytes.Contains(k.loadCopies[0], []byte(hexKey)) {
		t.Fatal("the table load did not carry the hex key")
	}

	if le.Uint32(k.loadCopies[0][28:])&unix.DM_SECURE_DATA_FLAG == 0 {
		t.Error("table load without DM_SECURE_DATA_FLAG")
	}

	if !isZero(k.loads[0]) {
		t.Error("the table load buffer was not zeroed after the ioctl")
	}

	if !isZero(tg.Params) {
		t.Errorf("the target's params were not zeroed: %q", tg.Params)
	}

	wantPath := filepath.Join(sys.dev, "mapper", "vol")
	if d.Path != wantPath || d.Major != fakeMajor || d.Minor != 1 || d.UUID != "CRYPT-LUKS2-1234-vol" {
		t.Errorf("device %+v", d)
	}

	checkNode(t, wantPath, fakeMajor, 1)

	info, err := Status("vol")
	if err != nil {
		t.Fatal(err)
	}

	if info.Name != "vol" || info.UUID != d.UUID || info.Major != fakeMajor || info.Minor != 1 || info.TargetCount != 1 ||
		!info.ActiveTable || info.Suspended || info.ReadOnly || len(info.Targets) != 1 ||
		info.Targets[0] != (TargetStatus{Start: 0, Length: 2048, Type: "crypt"}) {
		t.Errorf("status %+v", info)
	}

	table, err := Table("vol")
	if err != nil {
		t.Fatal(err)
	}

	masked := "aes-xts-plain64 " + strings.Repeat("0", len(hexKey)) + " 0 8:0 32768 1 sector_size:4096"
	if len(table) != 1 || table[0].Params != masked || table[0].Type != "crypt" || table[0].Length != 2048 {
		t.Errorf("table %+v, want params %q", table, masked)
	}

	devs, err := List()
	if err != nil {
		t.Fatal(err)
	}

	if len(devs) != 1 || devs[0] != d {
		t.Errorf("list %+v, want [%+v]", devs, d)
	}

	if err := Remove("vol"); err != nil {
		t.Fatal(err)
	}

	if _, err := os.Lstat(wantPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("node after Remove: %v", err)
	}

	if _, err := Status("vol"); !errors.Is(err, ErrNotFound) || !errors.Is(err, unix.ENXIO) {
		t.Errorf("Status after Remove: %v", err)
	}

	if devs, err := List(); err != nil || len(devs) != 0 {
		t.Errorf("list after Remove: %+v, %v", devs, err)
	}
}

func TestCreateReadOnly(t *testing.T) {
	needRoot(t)
	newFake(t)

	if _, err := Create("ro", "", []Target{{Length: 8, Type: "zero"}}, ReadOnly); err != nil {
		t.Fatal(err)
	}

	if info, err := Status("ro"); err != nil || !info.ReadOnly {
		t.Errorf("status %+v, %v", info, err)
	}
}

// TestCreateCleansUp: a failure after the device exists removes it, and
// the key is wiped whatever failed.
func TestCreateCleansUp(t *testing.T) {
	needRoot(t)

	for _, c := range []struct {
		cmd   uint
		errno unix.Errno
		want  string
	}{
		{unix.DM_TABLE_LOAD, unix.EINVAL, "load table of \"vol\" (types crypt): invalid argument (see the kernel log)"},
		{unix.DM_DEV_SUSPEND, unix.ENOMEM, "resume \"vol\": cannot allocate memory"},
	} {
		t.Run(unix.ErrnoName(c.errno), func(t *testing.T) {
			k := newFake(t)
			k.fail[c.cmd] = c.errno
			tg := CryptTarget(0, 2048, "aes-xts-plain64", testKey(), 0, "8:0", 32768, 512)

			_, err := Create("vol", "", []Target{tg}, 0)
			if err == nil || !strings.Contains(err.Error(), c.want) || !errors.Is(err, c.errno) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}

			if len(k.devs) != 0 || k.calls[len(k.calls)-1] != unix.DM_DEV_REMOVE {
				t.Errorf("left %d devices; commands %#x", len(k.devs), k.calls)
			}

			if !isZero(tg.Params) {
				t.Error("key not wiped after a failed Create")
			}

			for _, b := range k.loads {
				if !isZero(b) {
					t.Error("load buffer not wiped after a failed Create")
				}
			}

			if _, err := os.Lstat(filepath.Join(sys.dev, "mapper", "vol")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("node left behind: %v", err)
			}
		})
	}
}

func TestCreateExisting(t *testing.T) {
	needRoot(t)

	k := newFake(t)

	if _, err := Create("vol", "", []Target{{Length: 8, Type: "zero"}}, 0); err != nil {
		t.Fatal(err)
	}

	_, err := Create("vol", "", []Target{{Length: 16, Type: "zero"}}, 0)
	if !errors.Is(err, ErrExists) || !errors.Is(err, unix.EBUSY) {
		t.Errorf("second Create: %v", err)
	}

	// The first mapping is untouched: nothing was loaded into it.
	if d := k.devs["vol"]; d == nil || d.live[0].length != 8 || d.hasInactive {
		t.Errorf("existing mapping changed: %+v", d)
	}
}

func TestRemoveBusy(t *testing.T) {
	needRoot(t)

	k := newFake(t)
	mk := func(name string) *fakeDev {
		if _, err := Create(name, "", []Target{{Length: 8, Type: "zero"}}, 0); err != nil {
			t.Fatal(err)
		}

		return k.devs[name]
	}

	// Busy for a moment (a prober, a sync), then free: retried.
	mk("flicker").busyFor = 3
	if err := Remove("flicker"); err != nil || k.devs["flicker"] != nil {
		t.Errorf("Remove of a briefly busy device: %v", err)
	}

	// Held open: fails after the timeout with the open count.
	mk("held").open = 2
	start := time.Now()

	err := Remove("held", WithTimeout(300*time.Millisecond))
	if el := time.Since(start); el < 300*time.Millisecond || el > 3*time.Second {
		t.Errorf("Remove gave up after %v", el)
	}

	if !errors.Is(err, ErrBusy) || !errors.Is(err, unix.EBUSY) || !strings.Contains(err.Error(), "open count 2") {
		t.Errorf("Remove of a held device: %v", err)
	}

	checkNode(t, filepath.Join(sys.dev, "mapper", "held"), fakeMajor, k.devs["held"].minor)

	// No timeout: one attempt.
	n := len(k.calls)
	if err := Remove("held", WithTimeout(0)); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "1 attempts") {
		t.Errorf("Remove without retries: %v", err)
	}

	if removes := countCmd(k.calls[n:], unix.DM_DEV_REMOVE); removes != 1 {
		t.Errorf("%d removal attempts without retries", removes)
	}

	// Deferred: accepted at once, the mapping stays until its last close.
	if err := Remove("held", Deferred()); err != nil {
		t.Fatal(err)
	}

	if info, err := Status("held"); err != nil || !info.DeferredRemove {
		t.Errorf("after a deferred Remove: %+v, %v", info, err)
	}

	if _, err := os.Lstat(filepath.Join(sys.dev, "mapper", "held")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("node after a deferred Remove: %v", err)
	}
}

func TestRemoveMissing(t *testing.T) {
	newFake(t)

	if err := Remove("nope"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `remove "nope"`) {
		t.Errorf("Remove of a missing device: %v", err)
	}
}

func TestNames(t *testing.T) {
	newFake(t)

	long := strings.Repeat("n", 128)

	for name, want := range map[string]string{
		long:      "device name of 128 bytes, the kernel allows 127",
		"":        "empty device name",
		"a/b":     "contains / or NUL",
		"..":      "reserved",
		"control": "reserved",
	} {
		for op, f := range map[string]func() error{
			"Create": func() error { _, err := Create(name, "", []Target{{Length: 8, Type: "zero"}}, 0); return err },
			"Remove": func() error { return Remove(name) },
			"Status": func() error { _, err := Status(name); return err },
			"Table":  func() error { _, err := Table(name); return err },
			"Open":   func() error { _, err := OpenLUKS2("/dev/null", name, nil); return err },
		} {
			if err := f(); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s(%.10q...): %v, want %q", op, name, err, want)
			}
		}
	}

	if _, err := Create("vol", strings.Repeat("u", 129), []Target{{Length: 8, Type: "zero"}}, 0); err == nil ||
		!strings.Contains(err.Error(), "uuid of 129 bytes, the kernel allows 128") {
		t.Errorf("long uuid: %v", err)
	}

	for want, ts := range map[string][]Target{
		"no targets":          nil,
		"type \"\"":           {{Length: 8}},
		"zero length":         {{Type: "zero"}},
		"starts at sector 16": {{Length: 8, Type: "zero"}, {Start: 16, Length: 8, Type: "zero"}},
		"contain NUL":         {{Length: 8, Type: "linear", Params: []byte("8:0\x000")}},
	} {
		if _, err := Create("vol", "", ts, 0); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Create with %v: %v, want %q", ts, err, want)
		}
	}
}

func TestNameAtLimit(t *testing.T) {
	needRoot(t)
	newFake(t)

	name := strings.Repeat("n", 127)
	if _, err := Create(name, strings.Repeat("u", 128), []Target{{Length: 8, Type: "zero"}}, 0); err != nil {
		t.Fatal(err)
	}

	if info, err := Status(name); err != nil || info.Name != name || len(info.UUID) != 128 {
		t.Errorf("status of a 127-byte name: %+v, %v", info, err)
	}
}

// TestMissingControl: without the control node and without dm_mod, the
// error names the node and says what is missing.
func TestMissingControl(t *testing.T) {
	old := sys
	t.Cleanup(func() { sys = old })

	dir := t.TempDir()
	sys = system{control: filepath.Join(dir, "mapper", "control"), misc: filepath.Join(dir, "misc-dev"), dev: dir, open: openFile}

	for op, f := range map[string]func() error{
		"Version": func() error { _, err := Version(); return err },
		"List":    func() error { _, err := List(); return err },
		"Status":  func() error { _, err := Status("vol"); return err },
		"Remove":  func() error { return Remove("vol") },
		"Create":  func() error { _, err := Create("vol", "", []Target{{Length: 8, Type: "zero"}}, 0); return err },
	} {
		err := f()
		if !errors.Is(err, ErrNoDeviceMapper) || !errors.Is(err, fs.ErrNotExist) ||
			!strings.Contains(err.Error(), sys.control+" does not exist (is dm_mod loaded?)") {
			t.Errorf("%s: %v", op, err)
		}
	}
}

// TestControlFromSysfs: dm_mod loaded but no node (no devtmpfs): the
// node is made from the number sysfs gives.
func TestControlFromSysfs(t *testing.T) {
	needRoot(t)

	k := newFake(t)
	if err := os.WriteFile(sys.misc, []byte("10:236\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	sys.open = func(p string) (controller, error) {
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}

		k.opens++

		return fakeCtl{k}, nil
	}

	v, err := Version()
	if err != nil || v != [3]uint32{4, 47, 0} {
		t.Fatalf("Version = %v, %v", v, err)
	}

	var st unix.Stat_t
	if err := unix.Stat(sys.control, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != unix.Mkdev(10, 236) {
		t.Errorf("control node: %+v, %v", st, err)
	}
}

func TestTableGrowsReplyBuffer(t *testing.T) {
	needRoot(t)

	k := newFake(t)

	// 300 targets of 64 bytes: 19 KiB, more than the first 16 KiB.
	var ts []Target
	for i := range 300 {
		ts = append(ts, Target{Start: uint64(8 * i), Length: 8, Type: "linear", Params: fmt.Appendf(nil, "8:0 %020d", i)})
	}

	if _, err := Create("big", "", ts, 0); err != nil {
		t.Fatal(err)
	}

	n := len(k.calls)

	table, err := Table("big")
	if err != nil {
		t.Fatal(err)
	}

	if len(table) != 300 || table[299].Params != fmt.Sprintf("8:0 %020d", 299) || table[299].Start != 8*299 {
		t.Errorf("%d targets, last %+v", len(table), table[len(table)-1])
	}

	if got := countCmd(k.calls[n:], unix.DM_TABLE_STATUS); got != 2 {
		t.Errorf("%d DM_TABLE_STATUS calls, want 2 (16 KiB, then 32 KiB)", got)
	}
}

func checkNode(t *testing.T, p string, major, minor uint32) {
	t.Helper()

	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}

	if st.Mode&unix.S_IFMT != unix.S_IFBLK || st.Rdev != unix.Mkdev(major, minor) {
		t.Errorf("%s: mode %#o rdev %d:%d, want a block device %d:%d", p, st.Mode, unix.Major(st.Rdev), unix.Minor(st.Rdev), major, minor)
	}
}

func isZero(b []byte) bool { return len(b) > 0 && bytes.Count(b, []byte{0}) == len(b) }

func countCmd(calls []uint, cmd uint) int {
	n := 0

	for _, c := range calls {
		if c == cmd {
			n++
		}
	}

	return n
}
