package dm

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cIoctl and cSpec mirror struct dm_ioctl and struct dm_target_spec
// field by field, so the compiler's layout (C's, for these types) checks
// the constants abi.go writes with.
type cIoctl struct {
	Version     [3]uint32
	DataSize    uint32
	DataStart   uint32
	TargetCount uint32
	OpenCount   int32
	Flags       uint32
	EventNr     uint32
	Padding     uint32
	Dev         uint64
	Name        [128]byte
	UUID        [129]byte
	Data        [7]byte
}

type cSpec struct {
	SectorStart uint64
	Length      uint64
	Status      int32
	Next        uint32
	TargetType  [16]byte
}

func TestLayout(t *testing.T) {
	var h cIoctl

	var s cSpec

	for _, c := range []struct {
		what      string
		got, want uintptr
	}{
		{"sizeof(dm_ioctl)", unsafe.Sizeof(h), 312},
		{"ioctlSize", ioctlSize, 312},
		{"sizeof(dm_target_spec)", unsafe.Sizeof(s), 40},
		{"specSize", specSize, 40},
		{"version", unsafe.Offsetof(h.Version), offVersion},
		{"data_size", unsafe.Offsetof(h.DataSize), offDataSize},
		{"data_start", unsafe.Offsetof(h.DataStart), offDataStart},
		{"target_count", unsafe.Offsetof(h.TargetCount), offTargetCount},
		{"open_count", unsafe.Offsetof(h.OpenCount), offOpenCount},
		{"flags", unsafe.Offsetof(h.Flags), offFlags},
		{"event_nr", unsafe.Offsetof(h.EventNr), offEventNr},
		{"dev", unsafe.Offsetof(h.Dev), offDev},
		{"name", unsafe.Offsetof(h.Name), offName},
		{"uuid", unsafe.Offsetof(h.UUID), offUUID},
		{"data", unsafe.Offsetof(h.Data), 305},
		{"sector_start", unsafe.Offsetof(s.SectorStart), offSpecStart},
		{"length", unsafe.Offsetof(s.Length), offSpecLength},
		{"status", unsafe.Offsetof(s.Status), offSpecStatus},
		{"next", unsafe.Offsetof(s.Next), offSpecNext},
		{"target_type", unsafe.Offsetof(s.TargetType), offSpecType},
		{"DM_NAME_LEN", nameLen, unsafe.Sizeof(h.Name)},
		{"DM_UUID_LEN", uuidLen, unsafe.Sizeof(h.UUID)},
		{"DM_MAX_TYPE_NAME", typeNameLen, unsafe.Sizeof(s.TargetType)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.what, c.got, c.want)
		}
	}
}

// TestIoctlNumbers: x/sys/unix's numbers are _IOWR(0xfd, nr, struct
// dm_ioctl), so they carry the 312-byte size the buffers start with.
func TestIoctlNumbers(t *testing.T) {
	iowr := func(nr uint) uint { return 3<<30 | ioctlSize<<16 | 0xfd<<8 | nr }

	for _, c := range []struct {
		name string
		got  uint
		nr   uint
	}{
		{"DM_VERSION", unix.DM_VERSION, 0},
		{"DM_LIST_DEVICES", unix.DM_LIST_DEVICES, 2},
		{"DM_DEV_CREATE", unix.DM_DEV_CREATE, 3},
		{"DM_DEV_REMOVE", unix.DM_DEV_REMOVE, 4},
		{"DM_DEV_SUSPEND", unix.DM_DEV_SUSPEND, 6},
		{"DM_DEV_STATUS", unix.DM_DEV_STATUS, 7},
		{"DM_TABLE_LOAD", unix.DM_TABLE_LOAD, 9},
		{"DM_TABLE_STATUS", unix.DM_TABLE_STATUS, 12},
	} {
		if c.got != iowr(c.nr) {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, iowr(c.nr))
		}
	}
}

// TestLoadBufferGolden checks a two-target table load byte for byte
// against a buffer laid out by hand from dm-ioctl.h.
func TestLoadBufferGolden(t *testing.T) {
	targets := []Target{
		{Start: 0, Length: 8, Type: "linear", Params: []byte("8:0 2048")},
		{Start: 8, Length: 16, Type: "crypt", Params: []byte("aes-xts-plain64 0011 0 8:16 32")},
	}

	// Target 1: 40 + "8:0 2048\0" (9) = 49, padded to 56.
	// Target 2: 40 + 31 + 1 = 72, already aligned.
	want := make([]byte, 312+56+72)
	le := binary.LittleEndian
	le.PutUint32(want[0:], 4)          // version 4.0.0
	le.PutUint32(want[12:], 312+56+72) // data_size
	le.PutUint32(want[16:], 312)       // data_start
	le.PutUint32(want[20:], 2)         // target_count
	le.PutUint32(want[28:], 0x8001)    // DM_SECURE_DATA_FLAG | DM_READONLY_FLAG
	copy(want[48:], "vol")

	s1 := want[312:]
	le.PutUint64(s1[8:], 8)   // length
	le.PutUint32(s1[20:], 56) // next: from this spec to the following one
	copy(s1[24:], "linear")
	copy(s1[40:], "8:0 2048")

	s2 := want[312+56:]
	le.PutUint64(s2[0:], 8)
	le.PutUint64(s2[8:], 16)
	le.PutUint32(s2[20:], 72)
	copy(s2[24:], "crypt")
	copy(s2[40:], "aes-xts-plain64 0011 0 8:16 32")

	if n := loadSize(targets); n != len(want) {
		t.Fatalf("loadSize = %d, want %d", n, len(want))
	}

	got := newBuffer(loadSize(targets), "vol", "", unix.DM_SECURE_DATA_FLAG|unix.DM_READONLY_FLAG)
	ne.PutUint32(got[offTargetCount:], 2)
	putTargets(got, targets)

	if !bytes.Equal(got, want) {
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("load buffer differs first at byte %d: got %#x, want %#x", i, got[i], want[i])
			}
		}
	}

	// And the fake kernel, which follows populate_table, reads it back.
	ts, err := readLoad(got)
	if err != nil || len(ts) != 2 || ts[1].params != string(targets[1].Params) || ts[0].typ != "linear" {
		t.Errorf("readLoad = %+v, %v", ts, err)
	}
}

// statusReply lays out a DM_TABLE_STATUS reply by hand: specs from
// data_start, next relative to the data area.
func statusReply(t *testing.T) []byte {
	t.Helper()

	le := binary.LittleEndian
	buf := make([]byte, 1024)
	le.PutUint32(buf[0:], 4)
	le.PutUint32(buf[4:], 47)
	le.PutUint32(buf[12:], 312+48+72) // data_size
	le.PutUint32(buf[16:], 312)
	le.PutUint32(buf[20:], 2) // target_count
	le.PutUint32(buf[24:], 1) // open_count
	le.PutUint32(buf[28:], unix.DM_ACTIVE_PRESENT_FLAG|unix.DM_READONLY_FLAG)
	le.PutUint32(buf[32:], 3)                    // event_nr
	le.PutUint64(buf[40:], unix.Mkdev(253, 300)) // dev, minor over 255
	copy(buf[48:], "cryptvol")
	copy(buf[176:], "CRYPT-LUKS2-0123-cryptvol")

	// Spec 1: 40 + "\0" = 41, padded to 48; an empty status line.
	s := buf[312:]
	le.PutUint64(s[8:], 2048)
	le.PutUint32(s[20:], 48) // next: the data offset of spec 2
	copy(s[24:], "zero")

	// Spec 2: 40 + 31 + "\0" = 72.
	s = buf[312+48:]
	le.PutUint64(s[0:], 2048)
	le.PutUint64(s[8:], 4096)
	le.PutUint32(s[20:], 48+72)
	copy(s[24:], "crypt")
	copy(s[40:], "aes-xts-plain64 abcdef 0 8:0 32")

	return buf
}

func TestParseStatusReply(t *testing.T) {
	buf := statusReply(t)

	h, err := parseHeader(buf)
	if err != nil {
		t.Fatal(err)
	}

	info := infoOf(h)
	if info.Name != "cryptvol" || info.UUID != "CRYPT-LUKS2-0123-cryptvol" || info.Major != 253 || info.Minor != 300 ||
		info.OpenCount != 1 || info.TargetCount != 2 || info.EventNr != 3 || !info.ReadOnly || !info.ActiveTable ||
		info.Suspended || info.InactiveTable || h.Version != [3]uint32{4, 47, 0} {
		t.Errorf("info = %+v, version %v", info, h.Version)
	}

	ts, err := parseTargets(buf, h)
	if err != nil {
		t.Fatal(err)
	}

	if len(ts) != 2 || ts[0].Type != "zero" || ts[0].Length != 2048 || len(ts[0].Params) != 0 ||
		ts[1].Type != "crypt" || ts[1].Start != 2048 || ts[1].Length != 4096 || string(ts[1].Params) != "aes-xts-plain64 abcdef 0 8:0 32" {
		t.Errorf("targets = %+v", ts)
	}
}

// TestParseHeaderOnlyReply: for commands without data the kernel
// answers data_size 305 (offsetof(struct dm_ioctl, data)) with the
// data_start of 312 it was sent: a valid reply without data.
func TestParseHeaderOnlyReply(t *testing.T) {
	buf := newBuffer(ioctlSize, "vol", "", 0)
	ne.PutUint32(buf[offDataSize:], 305)
	ne.PutUint64(buf[offDev:], unix.Mkdev(253, 2))

	h, err := parseHeader(buf)
	if err != nil || h.Name != "vol" || h.Dev != unix.Mkdev(253, 2) || h.data(buf) != nil {
		t.Fatalf("header %+v, %v", h, err)
	}

	if ts, err := parseTargets(buf, h); err != nil || len(ts) != 0 {
		t.Errorf("targets %+v, %v", ts, err)
	}

	if devs, err := parseNameList(buf, h); err != nil || devs != nil {
		t.Errorf("devices %+v, %v", devs, err)
	}
}

func TestParseBadReplies(t *testing.T) {
	le := binary.LittleEndian

	for _, c := range []struct {
		name   string
		mangle func(b []byte) []byte
		want   string
	}{
		{"short", func(b []byte) []byte { return b[:100] }, "shorter than struct dm_ioctl"},
		{"data beyond the buffer", func(b []byte) []byte { le.PutUint32(b[12:], 5000); return b }, "announces 5000 bytes, more than its 1024"},
		{"start after size", func(b []byte) []byte { le.PutUint32(b[16:], 900); return b }, "overruns the 0-byte reply"},
		{"too many targets", func(b []byte) []byte { le.PutUint32(b[20:], 3); return b }, "overruns"},
		{"next going back", func(b []byte) []byte { le.PutUint32(b[312+20:], 0); return b }, "does not move past"},
		{"no NUL", func(b []byte) []byte {
			le.PutUint32(b[12:], 312+48+71) // the data ends right before spec 2's NUL
			return b
		}, "not NUL-terminated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf := c.mangle(statusReply(t))

			h, err := parseHeader(buf)
			if err == nil {
				_, err = parseTargets(buf, h)
			}

			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestParseNameList(t *testing.T) {
	le := binary.LittleEndian
	buf := make([]byte, 1024)
	le.PutUint32(buf[0:], 4)
	le.PutUint32(buf[16:], 312)

	// Record 1 at 0: "a" with a uuid: name ends at 14 -> trailer at 16,
	// uuid at 24, "U-1\0" ends at 28 -> next record at 32.
	d := buf[312:]
	le.PutUint64(d[0:], unix.Mkdev(253, 0))
	le.PutUint32(d[8:], 32)
	copy(d[12:], "a")
	le.PutUint32(d[16:], 7)
	le.PutUint32(d[20:], unix.DM_NAME_LIST_FLAG_HAS_UUID)
	copy(d[24:], "U-1")

	// Record 2 at 32: "bee" without one: trailer at 32+16, ends at 56.
	r := d[32:]
	le.PutUint64(r[0:], unix.Mkdev(253, 1000))
	copy(r[12:], "bee")
	le.PutUint32(r[20:], unix.DM_NAME_LIST_FLAG_DOESNT_HAVE_UUID)
	le.PutUint32(buf[12:], 312+56)

	h, err := parseHeader(buf)
	if err != nil {
		t.Fatal(err)
	}

	devs, err := parseNameList(buf, h)
	if err != nil {
		t.Fatal(err)
	}

	want := []Device{{Name: "a", UUID: "U-1", Major: 253}, {Name: "bee", Major: 253, Minor: 1000}}
	if len(devs) != 2 || devs[0] != want[0] || devs[1] != want[1] {
		t.Errorf("devices = %+v, want %+v", devs, want)
	}

	// No devices: the kernel writes one record with dev 0.
	le.PutUint32(buf[12:], 312+16)
	clear(d[:64])

	if h, err = parseHeader(buf); err != nil {
		t.Fatal(err)
	}

	if devs, err := parseNameList(buf, h); err != nil || devs != nil {
		t.Errorf("empty list = %+v, %v", devs, err)
	}

	// A next pointing outside the reply.
	le.PutUint64(d[0:], unix.Mkdev(253, 0))
	le.PutUint32(d[8:], 4000)
	copy(d[12:], "a")

	if _, err := parseNameList(buf, h); err == nil || !strings.Contains(err.Error(), "out of bounds") {
		t.Errorf("bad next: %v", err)
	}
}
