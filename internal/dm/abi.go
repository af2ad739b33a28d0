package dm

// The device-mapper ioctl ABI, version 4 (include/uapi/linux/dm-ioctl.h):
// every command takes one buffer that starts with struct dm_ioctl and
// may carry data after it, at data_start.

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Sizes of the ABI's structures and strings. The ioctl numbers in
// x/sys/unix (unix.DM_*) encode ioctlSize; abi_test.go checks both
// against a Go mirror of the C structs.
const (
	ioctlSize    = 312 // sizeof(struct dm_ioctl)
	specSize     = 40  // sizeof(struct dm_target_spec)
	nameListSize = 12  // offsetof(struct dm_name_list, name)

	nameLen     = unix.DM_NAME_LEN      // name, NUL included
	uuidLen     = unix.DM_UUID_LEN      // uuid, NUL included
	typeNameLen = unix.DM_MAX_TYPE_NAME // target type, NUL included
)

// Field offsets in struct dm_ioctl.
const (
	offVersion     = 0
	offDataSize    = 12
	offDataStart   = 16
	offTargetCount = 20
	offOpenCount   = 24
	offFlags       = 28
	offEventNr     = 32
	offDev         = 40
	offName        = 48
	offUUID        = 176
)

// Field offsets in struct dm_target_spec; the parameter string follows
// the struct, NUL-terminated, and the next spec starts 8-byte aligned.
const (
	offSpecStart  = 0
	offSpecLength = 8
	offSpecStatus = 16
	offSpecNext   = 20
	offSpecType   = 24
)

// ioctlVersion is the interface version this package speaks. The kernel
// accepts any 4.x with x no newer than its own, and nothing here needs a
// feature newer than 4.0.
var ioctlVersion = [3]uint32{4, 0, 0}

var ne = binary.NativeEndian // the kernel's byte order

// header is the part of struct dm_ioctl this package reads and writes.
type header struct {
	Version     [3]uint32
	DataSize    uint32
	DataStart   uint32
	TargetCount uint32
	OpenCount   int32
	Flags       uint32
	EventNr     uint32
	Dev         uint64
	Name        string
	UUID        string
}

// newBuffer returns a zeroed ioctl buffer of size bytes (at least the
// header) with the header written at its start: version, data_size,
// data_start (right after the header), flags, name and uuid.
func newBuffer(size int, name, uuid string, flags uint32) []byte {
	size = max(size, ioctlSize)
	buf := make([]byte, size)
	h := header{Version: ioctlVersion, DataSize: uint32(size), DataStart: ioctlSize, Flags: flags, Name: name, UUID: uuid}
	h.put(buf)

	return buf
}

// put writes h into buf[:ioctlSize]. Name and UUID must have been
// validated to fit (checkName, checkUUID).
func (h *header) put(buf []byte) {
	for i, v := range h.Version {
		ne.PutUint32(buf[offVersion+4*i:], v)
	}

	ne.PutUint32(buf[offDataSize:], h.DataSize)
	ne.PutUint32(buf[offDataStart:], h.DataStart)
	ne.PutUint32(buf[offTargetCount:], h.TargetCount)
	ne.PutUint32(buf[offOpenCount:], uint32(h.OpenCount))
	ne.PutUint32(buf[offFlags:], h.Flags)
	ne.PutUint32(buf[offEventNr:], h.EventNr)
	ne.PutUint64(buf[offDev:], h.Dev)
	putCString(buf[offName:offName+nameLen], h.Name)
	putCString(buf[offUUID:offUUID+uuidLen], h.UUID)
}

// parseHeader reads the header the kernel wrote back, and checks that
// the data it announces lies inside buf.
func parseHeader(buf []byte) (header, error) {
	if len(buf) < ioctlSize {
		return header{}, fmt.Errorf("dm: reply of %d bytes, shorter than struct dm_ioctl", len(buf))
	}

	var h header
	for i := range h.Version {
		h.Version[i] = ne.Uint32(buf[offVersion+4*i:])
	}

	h.DataSize = ne.Uint32(buf[offDataSize:])
	h.DataStart = ne.Uint32(buf[offDataStart:])
	h.TargetCount = ne.Uint32(buf[offTargetCount:])
	h.OpenCount = int32(ne.Uint32(buf[offOpenCount:]))
	h.Flags = ne.Uint32(buf[offFlags:])
	h.EventNr = ne.Uint32(buf[offEventNr:])
	h.Dev = ne.Uint64(buf[offDev:])
	h.Name = cString(buf[offName : offName+nameLen])
	h.UUID = cString(buf[offUUID : offUUID+uuidLen])

	if h.DataSize > uint32(len(buf)) {
		return h, fmt.Errorf("dm: reply announces %d bytes, more than its %d", h.DataSize, len(buf))
	}

	return h, nil
}

// data is the reply's data area, [data_start, data_size). Commands
// without data (create, remove, resume, dev status) come back with
// data_size set to offsetof(struct dm_ioctl, data), 305, before the
// data_start sent (312): no data.
func (h *header) data(buf []byte) []byte {
	if h.DataStart >= h.DataSize {
		return nil
	}

	return buf[h.DataStart:h.DataSize]
}

// loadSize is the buffer DM_TABLE_LOAD needs for targets: the header,
// then per target a spec and its NUL-terminated parameters, padded to 8.
func loadSize(targets []Target) int {
	n := ioctlSize
	for _, t := range targets {
		n += specLen(t)
	}

	return n
}

func specLen(t Target) int { return align8(specSize + len(t.Params) + 1) }

// putTargets writes the specs into buf from data_start on. In a load,
// each spec's next is the distance from that spec to the following one
// (the kernel's populate_table), unlike in a status reply.
func putTargets(buf []byte, targets []Target) {
	off := ioctlSize
	for _, t := range targets {
		n := specLen(t)
		s := buf[off : off+n]
		ne.PutUint64(s[offSpecStart:], t.Start)
		ne.PutUint64(s[offSpecLength:], t.Length)
		ne.PutUint32(s[offSpecStatus:], 0)
		ne.PutUint32(s[offSpecNext:], uint32(n))
		putCString(s[offSpecType:offSpecType+typeNameLen], t.Type)
		copy(s[specSize:], t.Params) // the NUL and padding are the buffer's zeroes
		off += n
	}
}

// rawTarget is one spec of a status reply. Params aliases the reply
// buffer: a crypt table line holds the key until the buffer is wiped.
type rawTarget struct {
	Start, Length uint64
	Type          string
	Params        []byte
}

// parseTargets reads the target_count specs of a DM_TABLE_STATUS reply.
// There each spec's next is its offset from the start of the data area
// (the kernel's retrieve_status), and each parameter string ends with a
// NUL inside the data.
func parseTargets(buf []byte, h header) ([]rawTarget, error) {
	data := h.data(buf)
	out := make([]rawTarget, 0, min(h.TargetCount, 1024))
	off := 0

	for i := range int(h.TargetCount) {
		if off < 0 || off+specSize > len(data) {
			return nil, fmt.Errorf("dm: target %d at data offset %d overruns the %d-byte reply", i, off, len(data))
		}

		s := data[off:]
		end := bytes.IndexByte(s[specSize:], 0)
		if end < 0 {
			return nil, fmt.Errorf("dm: target %d: parameters not NUL-terminated", i)
		}

		out = append(out, rawTarget{
			Start:  ne.Uint64(s[offSpecStart:]),
			Length: ne.Uint64(s[offSpecLength:]),
			Type:   cString(s[offSpecType : offSpecType+typeNameLen]),
			Params: s[specSize : specSize+end],
		})

		next := int(ne.Uint32(s[offSpecNext:]))
		if i+1 < int(h.TargetCount) && next <= off {
			return nil, fmt.Errorf("dm: target %d: next spec at %d does not move past %d", i, next, off)
		}

		off = next
	}

	return out, nil
}

// parseNameList reads a DM_LIST_DEVICES reply: struct dm_name_list
// records (dev, next relative to the record, name), each name followed,
// 8-byte aligned, by event_nr, flags and, when the flags say so, the
// uuid. A first record with dev 0 means no devices.
func parseNameList(buf []byte, h header) ([]Device, error) {
	data := h.data(buf)
	if len(data) < nameListSize || ne.Uint64(data) == 0 {
		return nil, nil
	}

	var out []Device

	for off := 0; ; {
		if off+nameListSize > len(data) {
			return nil, fmt.Errorf("dm: device record at %d overruns the %d-byte reply", off, len(data))
		}

		rec := data[off:]
		next := int(ne.Uint32(rec[8:]))
		if next != 0 {
			if next < nameListSize || off+next > len(data) {
				return nil, fmt.Errorf("dm: device record at %d: next %d is out of bounds", off, next)
			}

			rec = rec[:next]
		}

		name := rec[nameListSize:]
		n := bytes.IndexByte(name, 0)
		if n < 0 {
			return nil, fmt.Errorf("dm: device record at %d: name not NUL-terminated", off)
		}

		dev := ne.Uint64(rec)
		d := Device{Name: string(name[:n]), Major: unix.Major(dev), Minor: unix.Minor(dev)}

		// The uuid trailer exists since interface 4.45 (Linux 5.14);
		// older kernels leave the record after the event number.
		ev := align8(nameListSize + n + 1)
		if ev+8 <= len(rec) && ne.Uint32(rec[ev+4:])&unix.DM_NAME_LIST_FLAG_HAS_UUID != 0 {
			d.UUID = cString(rec[ev+8:])
		}

		out = append(out, d)

		if next == 0 {
			return out, nil
		}

		off += next
	}
}

func align8(n int) int { return (n + 7) &^ 7 }

// putCString copies s into dst, NUL-padded; callers check it fits.
func putCString(dst []byte, s string) {
	n := copy(dst, s)
	clear(dst[n:])
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}

	return string(b)
}
