package dm

// dm-crypt tables (Documentation/admin-guide/device-mapper/dm-crypt.rst):
//
//	<cipher> <key> <iv_offset> <device> <offset> [<#opt_params> <opt_params>...]

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// CryptTarget builds a crypt target: length sectors from start, encrypted
// with cipher (as dm-crypt names it, "aes-xts-plain64") under key, IVs
// counted from ivOffset, data on devicePath (a path or "major:minor")
// from offsetSectors on, sectorSize bytes per encryption unit (0 or 512:
// dm-crypt's default), and dm-crypt's optional parameters (options,
// e.g. "allow_discards", "no_read_workqueue").
//
// The key is hex-encoded straight into the target's parameter buffer,
// never into a Go string, and the target is Secret: Create zeroes the
// buffer after loading it (Wipe does for a target not created). The
// caller still owns and zeroes key. An invalid argument makes Create
// fail; the error never contains the key.
func CryptTarget(start, length uint64, cipher string, key []byte, ivOffset uint64, devicePath string,
	offsetSectors uint64, sectorSize int, options ...string,
) Target {
	t := Target{Start: start, Length: length, Type: "crypt", Secret: true}

	opts := append([]string(nil), options...)

	switch sectorSize {
	case 0, Sector:
	case 1024, 2048, 4096:
		opts = append([]string{"sector_size:" + strconv.Itoa(sectorSize)}, opts...)

		if ss := uint64(sectorSize / Sector); start%ss != 0 || length%ss != 0 || offsetSectors%ss != 0 {
			t.err = fmt.Errorf("crypt: start %d, length %d and offset %d sectors must be multiples of the %d-byte sector size",
				start, length, offsetSectors, sectorSize)
		}
	default:
		t.err = fmt.Errorf("crypt: sector size %d is not 512, 1024, 2048 or 4096", sectorSize)
	}

	switch {
	case t.err != nil:
	case !isWord(cipher):
		t.err = fmt.Errorf("crypt: cipher %q must be one non-empty word", cipher)
	case len(key) == 0:
		t.err = errors.New("crypt: empty key")
	case !isWord(devicePath):
		t.err = fmt.Errorf("crypt: device %q must be one non-empty word", devicePath)
	}

	for _, o := range options {
		if !isWord(o) && t.err == nil {
			t.err = fmt.Errorf("crypt: option %q must be one non-empty word", o)
		}
	}

	if t.err != nil {
		return t
	}

	// Everything but the key is public; the buffer is sized exactly so
	// that no append ever copies the key into an array left unzeroed.
	head := cipher + " "
	tail := " " + strconv.FormatUint(ivOffset, 10) + " " + devicePath + " " + strconv.FormatUint(offsetSectors, 10)

	if len(opts) > 0 {
		tail += " " + strconv.Itoa(len(opts)) + " " + strings.Join(opts, " ")
	}

	t.Params = make([]byte, len(head)+hex.EncodedLen(len(key))+len(tail))
	n := copy(t.Params, head)
	n += hex.Encode(t.Params[n:], key)
	copy(t.Params[n:], tail)

	return t
}

// isWord: non-empty, and no byte the kernel's argument splitter or the
// table format would treat specially.
func isWord(s string) bool {
	return s != "" && !strings.ContainsAny(s, " \t\n\r\v\f\x00\\")
}

// maskCryptKey returns a copy of a crypt table line with the key
// replaced by zeroes of the same length, as dmsetup table does. A
// keyring reference (":<size>:<type>:<description>") names no secret
// and is kept; so is "-" (no key).
func maskCryptKey(line []byte) []byte {
	out := bytes.Clone(line)

	start := bytes.IndexByte(out, ' ')
	if start < 0 {
		return out
	}

	start++

	end := bytes.IndexByte(out[start:], ' ')
	if end < 0 {
		end = len(out) - start
	}

	key := out[start : start+end]
	if len(key) > 0 && key[0] != ':' && !bytes.Equal(key, []byte("-")) {
		for i := range key {
			key[i] = '0'
		}
	}

	return out
}
