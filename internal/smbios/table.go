package smbios

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Errors the parser wraps; test with errors.Is.
var (
	// ErrTruncated: the data ends inside an entry point or a structure.
	ErrTruncated = errors.New("smbios data truncated")
	// ErrMalformed: a length, anchor or checksum is impossible.
	ErrMalformed = errors.New("smbios data malformed")
)

// typeEndOfTable is the structure that closes a table.
const typeEndOfTable = 127

// headerLength is the type, length and handle every structure starts with.
const headerLength = 4

// Structure is one raw structure of the table.
type Structure struct {
	Type   uint8
	Handle uint16
	// Formatted is the formatted area including the 4-byte header, so the
	// offsets in the specification index it directly. It shares memory
	// with the table it was parsed from.
	Formatted []byte
	// Strings is the string set; a field refers to its strings from 1.
	Strings []string
}

// ParseStructures splits a table into its structures. A 2.x table ends
// after its length, its structure count or its end-of-table structure,
// whichever comes first; an SMBIOS 3 table at its end-of-table structure
// or the end of the data. A structure cut short is an error.
func ParseStructures(table []byte, ep EntryPoint) ([]Structure, error) {
	limit := len(table)

	if ep.Bits == 32 {
		// The 2.x length is exact: a shorter table lost structures.
		if int(ep.TableLength) > len(table) {
			return nil, fmt.Errorf("smbios table: %d bytes, the entry point announces %d: %w", len(table), ep.TableLength, ErrTruncated)
		}

		limit = int(ep.TableLength)
	} else if ep.TableLength != 0 {
		limit = min(limit, int(ep.TableLength))
	}

	data := table[:limit]

	var out []Structure

	for off := 0; off < len(data); {
		if ep.Bits == 32 && ep.Structures != 0 && len(out) == int(ep.Structures) {
			break
		}

		s, next, err := parseStructure(data, off)
		if err != nil {
			return nil, fmt.Errorf("smbios structure #%d at offset %#x: %w", len(out), off, err)
		}

		out = append(out, s)
		off = next

		if s.Type == typeEndOfTable {
			break
		}
	}

	return out, nil
}

func parseStructure(data []byte, off int) (Structure, int, error) {
	if len(data)-off < headerLength {
		return Structure{}, 0, fmt.Errorf("header needs %d bytes, %d left: %w", headerLength, len(data)-off, ErrTruncated)
	}

	typ, n := data[off], int(data[off+1])
	if n < headerLength {
		return Structure{}, 0, fmt.Errorf("type %d: length %d is shorter than the header: %w", typ, n, ErrMalformed)
	}

	end := off + n
	if end > len(data) {
		return Structure{}, 0, fmt.Errorf("type %d: formatted area of %d bytes, %d left: %w", typ, n, len(data)-off, ErrTruncated)
	}

	// The string set ends at the first double NUL, which is also all
	// there is when the structure has no strings.
	term := bytes.Index(data[end:], []byte{0, 0})
	if term < 0 {
		return Structure{}, 0, fmt.Errorf("type %d: string set is not terminated: %w", typ, ErrTruncated)
	}

	s := Structure{
		Type:      typ,
		Handle:    binary.LittleEndian.Uint16(data[off+2:]),
		Formatted: data[off:end:end],
	}

	if set := data[end : end+term]; len(set) > 0 {
		s.Strings = strings.Split(string(set), "\x00")
	}

	return s, end + term + 2, nil
}

// Byte is the byte at a specification offset, ok false past the
// structure's end (a field of a later version than the table's).
func (s Structure) Byte(off int) (uint8, bool) {
	if off+1 > len(s.Formatted) {
		return 0, false
	}

	return s.Formatted[off], true
}

// Word is the little-endian 16-bit field at off.
func (s Structure) Word(off int) (uint16, bool) {
	if off+2 > len(s.Formatted) {
		return 0, false
	}

	return binary.LittleEndian.Uint16(s.Formatted[off:]), true
}

// DWord is the little-endian 32-bit field at off.
func (s Structure) DWord(off int) (uint32, bool) {
	if off+4 > len(s.Formatted) {
		return 0, false
	}

	return binary.LittleEndian.Uint32(s.Formatted[off:]), true
}

// StringAt is the string the field at off refers to, cleaned as Talos
// cleans it: "" for no string (index 0, which dmidecode shows as "Not
// Specified"), an index past the set, text that is not UTF-8 (it could not
// travel over gRPC) or the "To Be Filled By O.E.M." placeholder; spaces
// around it trimmed.
func (s Structure) StringAt(off int) string {
	i, ok := s.Byte(off)
	if !ok || i == 0 || int(i) > len(s.Strings) {
		return ""
	}

	str := strings.TrimSpace(s.Strings[i-1])

	if !utf8.ValidString(str) || strings.EqualFold(str, "To Be Filled By O.E.M.") {
		return ""
	}

	return str
}
