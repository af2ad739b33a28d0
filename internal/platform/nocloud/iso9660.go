package nocloud

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
)

// The seed's root directory is all cloud-init reads, so this is a reader
// of one ISO 9660 directory and its files, not a filesystem: the primary
// volume descriptor (sector 16) gives the root directory's extent, whose
// records give each file's extent and size. A file's name is its Rock
// Ridge NM entry (what genisoimage -r and xorriso write), else the plain
// ISO 9660 name, lower-cased without ";1", with '_' standing for '-' (the
// names mkisofs makes without -r).
const isoSector = 2048

// isoFile is a root directory record.
type isoFile struct {
	name        string
	extent, len uint32
	dir         bool
}

// readRoot lists the root directory of the ISO 9660 filesystem in r.
func readRoot(r io.ReaderAt) ([]isoFile, error) {
	pvd := make([]byte, isoSector)
	if _, err := r.ReadAt(pvd, 16*isoSector); err != nil {
		return nil, fmt.Errorf("read the volume descriptor: %w", err)
	}

	if pvd[0] != 1 || string(pvd[1:6]) != "CD001" {
		return nil, fmt.Errorf("not an ISO 9660 filesystem (no primary volume descriptor)")
	}

	root := pvd[156 : 156+34]
	extent, size := binary.LittleEndian.Uint32(root[2:]), binary.LittleEndian.Uint32(root[10:])

	if size > 1<<20 {
		return nil, fmt.Errorf("root directory of %d bytes: too large for a seed", size)
	}

	dir := make([]byte, size)
	if _, err := r.ReadAt(dir, int64(extent)*isoSector); err != nil {
		return nil, fmt.Errorf("read the root directory: %w", err)
	}

	var out []isoFile

	for off := 0; off < len(dir); {
		n := int(dir[off])
		if n == 0 {
			// Records never cross a sector: the rest of this one is padding.
			off = (off/isoSector + 1) * isoSector
			continue
		}

		if n < 34 || off+n > len(dir) {
			return nil, fmt.Errorf("root directory: a record of %d bytes at %d", n, off)
		}

		rec := dir[off : off+n]
		off += n

		nameLen := int(rec[32])
		if 33+nameLen > len(rec) {
			return nil, fmt.Errorf("root directory: a name of %d bytes in a record of %d", nameLen, len(rec))
		}

		raw := rec[33 : 33+nameLen]
		if nameLen == 1 && (raw[0] == 0 || raw[0] == 1) {
			continue // "." and ".."
		}

		su := rec[33+nameLen+(1-nameLen%2):]

		name, ok := rockRidgeName(su)
		if !ok {
			name = plainName(string(raw))
		}

		out = append(out, isoFile{name: name, extent: binary.LittleEndian.Uint32(rec[2:]), len: binary.LittleEndian.Uint32(rec[10:]), dir: rec[25]&2 != 0})
	}

	return out, nil
}

// rockRidgeName is the NM entry of a record's system use area.
func rockRidgeName(su []byte) (string, bool) {
	var name strings.Builder

	found := false

	for len(su) >= 4 {
		n := int(su[2])
		if n < 4 || n > len(su) {
			break
		}

		if string(su[:2]) == "NM" && n >= 5 {
			name.Write(su[5:n])

			found = true

			if su[4]&1 == 0 { // no CONTINUE flag: the name is whole
				break
			}
		}

		su = su[n:]
	}

	return name.String(), found && name.Len() > 0
}

// plainName turns an ISO 9660 name ("USER_DAT.;1") into the one cloud-init
// would look for.
func plainName(s string) string {
	s, _, _ = strings.Cut(s, ";")
	s = strings.TrimSuffix(s, ".")

	return strings.ReplaceAll(strings.ToLower(s), "_", "-")
}

// readISOFile reads name from the root directory, nil when it is absent.
func readISOFile(r io.ReaderAt, files []isoFile, name string) ([]byte, error) {
	for _, f := range files {
		if f.name != name || f.dir {
			continue
		}

		if f.len > maxFile {
			return nil, fmt.Errorf("%d bytes: larger than %d", f.len, maxFile)
		}

		b := make([]byte, f.len)
		if _, err := r.ReadAt(b, int64(f.extent)*isoSector); err != nil {
			return nil, err
		}

		return bytes.Clone(b), nil
	}

	return nil, nil
}
