// Package smbiostest builds SMBIOS tables for the tests of the packages
// that read them (the parser, the hardware controller): structures with
// their string sets, both entry points, the sysfs files Linux exposes and
// dmidecode's --dump-bin file.
package smbiostest

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// Struct is one structure being built. Field offsets are the
// specification's, counted from the structure's first byte.
type Struct struct {
	formatted []byte
	strings   []string
}

// New starts a structure of a type whose formatted area (header included)
// is length bytes long.
func New(typ uint8, handle uint16, length int) *Struct {
	f := make([]byte, length)
	f[0], f[1] = typ, byte(length)
	binary.LittleEndian.PutUint16(f[2:], handle)

	return &Struct{formatted: f}
}

// Byte sets the byte at off.
func (s *Struct) Byte(off int, v uint8) *Struct {
	s.formatted[off] = v
	return s
}

// Word sets the little-endian 16-bit field at off.
func (s *Struct) Word(off int, v uint16) *Struct {
	binary.LittleEndian.PutUint16(s.formatted[off:], v)
	return s
}

// DWord sets the little-endian 32-bit field at off.
func (s *Struct) DWord(off int, v uint32) *Struct {
	binary.LittleEndian.PutUint32(s.formatted[off:], v)
	return s
}

// Bytes copies b to off.
func (s *Struct) Bytes(off int, b []byte) *Struct {
	copy(s.formatted[off:], b)
	return s
}

// Str adds v to the string set and points the field at off to it; ""
// leaves the field 0, "no string".
func (s *Struct) Str(off int, v string) *Struct {
	if v == "" {
		return s.Byte(off, 0)
	}

	s.strings = append(s.strings, v)

	return s.Byte(off, byte(len(s.strings)))
}

// Encode is the structure's bytes: the formatted area, then the string
// set and its double NUL.
func (s *Struct) Encode() []byte {
	out := append([]byte(nil), s.formatted...)

	for _, str := range s.strings {
		out = append(append(out, str...), 0)
	}

	if len(s.strings) == 0 {
		out = append(out, 0)
	}

	return append(out, 0)
}

// Table is the structures followed by the end-of-table structure.
func Table(structs ...*Struct) []byte {
	var out []byte
	for _, s := range structs {
		out = append(out, s.Encode()...)
	}

	return append(out, New(127, 0xFEFF, 4).Encode()...)
}

// EntryPoint3 is an SMBIOS 3 entry point for a table of at most tableLen
// bytes at addr.
func EntryPoint3(major, minor, docrev uint8, tableLen uint32, addr uint64) []byte {
	ep := make([]byte, 0x18)
	copy(ep, "_SM3_")
	ep[0x06], ep[0x07], ep[0x08], ep[0x09], ep[0x0A] = 0x18, major, minor, docrev, 1
	binary.LittleEndian.PutUint32(ep[0x0C:], tableLen)
	binary.LittleEndian.PutUint64(ep[0x10:], addr)
	Fix(ep)

	return ep
}

// EntryPoint2 is an SMBIOS 2.x entry point for a table of tableLen bytes
// holding count structures at addr.
func EntryPoint2(major, minor uint8, tableLen, count uint16, addr uint32) []byte {
	ep := make([]byte, 0x1F)
	copy(ep, "_SM_")
	ep[0x05], ep[0x06], ep[0x07] = 0x1F, major, minor
	binary.LittleEndian.PutUint16(ep[0x08:], 0x100) // largest structure
	copy(ep[0x10:], "_DMI_")
	binary.LittleEndian.PutUint16(ep[0x16:], tableLen)
	binary.LittleEndian.PutUint32(ep[0x18:], addr)
	binary.LittleEndian.PutUint16(ep[0x1C:], count)
	ep[0x1E] = major<<4 | minor&0x0F
	Fix(ep)

	return ep
}

// Fix recomputes an entry point's checksums after its fields changed,
// over its length field or the bytes there are, whichever is fewer.
func Fix(ep []byte) {
	fix := func(b []byte, at int) {
		b[at] = 0

		var sum byte
		for _, c := range b {
			sum += c
		}

		b[at] = -sum
	}

	switch string(ep[:4]) {
	case "_SM3":
		fix(ep[:min(int(ep[0x06]), len(ep))], 0x05)
	case "_SM_":
		fix(ep[0x10:0x1F], 0x05)
		fix(ep[:min(int(ep[0x05]), len(ep))], 0x04)
	}
}

// Dump is the file dmidecode --dump-bin writes and --from-dump reads: the
// entry point, its table address changed to 32, then the table at 32.
func Dump(ep, table []byte) []byte {
	e := append([]byte(nil), ep...)

	switch string(e[:4]) {
	case "_SM3":
		binary.LittleEndian.PutUint64(e[0x10:], 32)
	case "_SM_":
		binary.LittleEndian.PutUint32(e[0x18:], 32)
	}

	Fix(e)

	out := make([]byte, 32, 32+len(table))
	copy(out, e)

	return append(out, table...)
}

// Sysfs writes ep and table where Linux exposes them under a fresh sysfs
// root, and returns the root.
func Sysfs(t testing.TB, ep, table []byte) string {
	t.Helper()

	root := t.TempDir()
	dir := filepath.Join(root, "firmware", "dmi", "tables")

	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	for name, data := range map[string][]byte{"smbios_entry_point": ep, "DMI": table} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o444); err != nil {
			t.Fatal(err)
		}
	}

	return root
}
