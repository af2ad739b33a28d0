package dm

// A fake device-mapper behind the controller interface, for the flows
// (create, cleanup, busy removal, status, list) the host cannot run: it
// has no device-mapper. It reads table loads the way the kernel's
// populate_table does, with its own offsets, not abi.go's parser.

import (
	"bytes"
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

const fakeMajor = 253

type fakeTarget struct {
	start, length uint64
	typ, params   string
}

type fakeDev struct {
	name, uuid     string
	minor          uint32
	live, inactive []fakeTarget
	hasInactive    bool
	suspended      bool
	readOnly       bool
	deferred       bool
	open           int
	// busyFor answers EBUSY to this many more removals, then frees.
	busyFor int
}

type fakeKernel struct {
	t     *testing.T
	devs  map[string]*fakeDev
	minor uint32
	// fail makes a command fail with an errno instead of running.
	fail map[uint]unix.Errno
	// calls lists the commands in order; opens and closes count
	// control node opens.
	calls         []uint
	opens, closes int
	// loads holds each DM_TABLE_LOAD buffer as passed (still aliased,
	// to check it is wiped afterwards) and a copy taken during the call.
	loads, loadCopies [][]byte
}

// newFake points the package at a fake kernel and a temporary /dev.
func newFake(t *testing.T) *fakeKernel {
	t.Helper()

	k := &fakeKernel{t: t, devs: map[string]*fakeDev{}, fail: map[uint]unix.Errno{}}
	dev := t.TempDir()
	old := sys
	sys = system{
		control: filepath.Join(dev, "mapper", "control"),
		misc:    filepath.Join(dev, "no-sysfs"),
		dev:     dev,
		open: func(string) (controller, error) {
			k.opens++
			return fakeCtl{k}, nil
		},
	}

	t.Cleanup(func() {
		sys = old
		if k.opens != k.closes {
			t.Errorf("control node opened %d times, closed %d", k.opens, k.closes)
		}
	})

	return k
}

type fakeCtl struct{ k *fakeKernel }

func (c fakeCtl) Close() error { c.k.closes++; return nil }

var le = binary.LittleEndian

func (c fakeCtl) ioctl(cmd uint, buf []byte) error {
	k := c.k
	k.calls = append(k.calls, cmd)

	if e := k.fail[cmd]; e != 0 {
		return e
	}

	if v := le.Uint32(buf[0:]); v != 4 {
		k.t.Errorf("cmd %#x: interface version %d", cmd, v)
		return unix.EINVAL
	}

	name := cString(buf[48:176])
	d := k.devs[name]
	flags := le.Uint32(buf[28:])

	if d == nil && cmd != unix.DM_DEV_CREATE && cmd != unix.DM_LIST_DEVICES && cmd != unix.DM_VERSION {
		return unix.ENXIO
	}

	switch cmd {
	case unix.DM_VERSION:
		le.PutUint32(buf[4:], 47)
	case unix.DM_DEV_CREATE:
		if d != nil {
			return unix.EBUSY
		}

		k.minor++
		d = &fakeDev{name: name, uuid: cString(buf[176:305]), minor: k.minor, suspended: true}
		k.devs[name] = d
	case unix.DM_TABLE_LOAD:
		k.loads = append(k.loads, buf)
		k.loadCopies = append(k.loadCopies, bytes.Clone(buf))

		ts, err := readLoad(buf)
		if err != nil {
			k.t.Errorf("table load: %v", err)
			return unix.EINVAL
		}

		d.inactive, d.hasInactive, d.readOnly = ts, true, flags&1 != 0
	case unix.DM_DEV_SUSPEND:
		if flags&unix.DM_SUSPEND_FLAG != 0 {
			d.suspended = true
			break
		}

		if d.hasInactive {
			d.live, d.inactive, d.hasInactive = d.inactive, nil, false
		}

		d.suspended = false
	case unix.DM_DEV_REMOVE:
		if d.busyFor > 0 {
			d.busyFor--
			return unix.EBUSY
		}

		if d.open > 0 {
			if flags&unix.DM_DEFERRED_REMOVE != 0 {
				d.deferred = true
				return nil
			}

			return unix.EBUSY
		}

		delete(k.devs, name)
	case unix.DM_DEV_STATUS:
	case unix.DM_TABLE_STATUS:
		return k.status(d, buf, flags&unix.DM_STATUS_TABLE_FLAG != 0)
	case unix.DM_LIST_DEVICES:
		return k.list(buf)
	default:
		return unix.ENOTTY
	}

	if d != nil {
		k.devStatus(d, buf)
	}

	// Commands without data answer with data_size cut to
	// offsetof(struct dm_ioctl, data), as copy_params does.
	if cmd != unix.DM_TABLE_LOAD {
		le.PutUint32(buf[12:], 305)
	}

	return nil
}

// readLoad parses a table load as the kernel does: the first spec is
// data_start bytes from the buffer's start, each next one spec.next
// bytes after the one before, parameters NUL-terminated.
func readLoad(buf []byte) ([]fakeTarget, error) {
	count := le.Uint32(buf[20:])
	off := int(le.Uint32(buf[16:]))

	var out []fakeTarget

	for range count {
		if off+40 >= len(buf) {
			return nil, os.ErrInvalid
		}

		s := buf[off:]
		end := bytes.IndexByte(s[40:], 0)
		if end < 0 {
			return nil, os.ErrInvalid
		}

		out = append(out, fakeTarget{le.Uint64(s[0:]), le.Uint64(s[8:]), cString(s[24:40]), string(s[40 : 40+end])})
		off += int(le.Uint32(s[20:]))
	}

	return out, nil
}

func (k *fakeKernel) devStatus(d *fakeDev, buf []byte) {
	var flags uint32
	if d.suspended {
		flags |= unix.DM_SUSPEND_FLAG
	}

	if d.readOnly {
		flags |= unix.DM_READONLY_FLAG
	}

	if d.live != nil {
		flags |= unix.DM_ACTIVE_PRESENT_FLAG
	}

	if d.hasInactive {
		flags |= unix.DM_INACTIVE_PRESENT_FLAG
	}

	if d.deferred {
		flags |= unix.DM_DEFERRED_REMOVE
	}

	le.PutUint32(buf[20:], uint32(len(d.live)))
	le.PutUint32(buf[24:], uint32(d.open))
	le.PutUint32(buf[28:], flags)
	le.PutUint64(buf[40:], unix.Mkdev(fakeMajor, d.minor))
	putCString(buf[176:305], d.uuid)
}

// status writes a DM_TABLE_STATUS reply as retrieve_status does: specs
// from data_start, next relative to the data area, 8-byte aligned; a
// crypt target's status line is empty, its table line has the key.
func (k *fakeKernel) status(d *fakeDev, buf []byte, table bool) error {
	k.devStatus(d, buf)
	le.PutUint32(buf[16:], 312)

	data := buf[312:]
	off := 0

	for _, t := range d.live {
		line := t.params
		if !table && t.typ == "crypt" {
			line = ""
		}

		n := align8(40 + len(line) + 1)
		if off+n > len(data) {
			le.PutUint32(buf[28:], le.Uint32(buf[28:])|unix.DM_BUFFER_FULL_FLAG)
			return nil
		}

		s := data[off:]
		le.PutUint64(s[0:], t.start)
		le.PutUint64(s[8:], t.length)
		putCString(s[24:40], t.typ)
		copy(s[40:], line)
		s[40+len(line)] = 0
		off += n
		le.PutUint32(s[20:], uint32(off))
	}

	le.PutUint32(buf[12:], uint32(312+off))

	return nil
}

// list writes dm_name_list records with the event_nr, flags and uuid
// trailer of interface 4.45.
func (k *fakeKernel) list(buf []byte) error {
	le.PutUint32(buf[16:], 312)
	data := buf[312:]
	clear(data[:8])

	off, prev := 0, -1

	for _, name := range slices.Sorted(maps.Keys(k.devs)) {
		d := k.devs[name]
		if prev >= 0 {
			le.PutUint32(data[prev+8:], uint32(off-prev))
		}

		r := data[off:]
		le.PutUint64(r[0:], unix.Mkdev(fakeMajor, d.minor))
		le.PutUint32(r[8:], 0)
		copy(r[12:], name)
		r[12+len(name)] = 0

		ev := align8(12 + len(name) + 1)
		le.PutUint32(r[ev:], 1)
		le.PutUint32(r[ev+4:], unix.DM_NAME_LIST_FLAG_DOESNT_HAVE_UUID)
		n := ev + 8

		if d.uuid != "" {
			le.PutUint32(r[ev+4:], unix.DM_NAME_LIST_FLAG_HAS_UUID)
			copy(r[n:], d.uuid)
			r[n+len(d.uuid)] = 0
			n = align8(n + len(d.uuid) + 1)
		}

		prev, off = off, off+n
	}

	le.PutUint32(buf[12:], uint32(312+off))

	return nil
}
