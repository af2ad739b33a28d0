package luks2

import (
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
)

// Layout of the 4096-byte binary header that starts each copy. Fields are
// big-endian; strings are NUL-padded.
const (
	binHeaderSize = 4096

	offMagic     = 0
	offVersion   = 6
	offHdrSize   = 8
	offSeqID     = 16
	offLabel     = 24
	offCsumAlg   = 72
	offSalt      = 104
	offUUID      = 168
	offSubsystem = 208
	offHdrOffset = 256
	offCsum      = 448

	lenLabel   = 48
	lenCsumAlg = 32
	lenSalt    = 64
	lenUUID    = 40
	lenCsum    = 64

	magicPrimary   = "LUKS\xba\xbe"
	magicSecondary = "SKUL\xba\xbe"

	// DefaultMetadataSize is one header copy (binary header plus JSON area)
	// as cryptsetup writes it by default.
	DefaultMetadataSize = 16 << 10
)

// metadataSizes are the hdr_size values LUKS2 allows. They are also the
// offsets at which a secondary copy may sit, which is where we look for it
// when the primary is unreadable and its hdr_size cannot be trusted.
var metadataSizes = []uint64{16 << 10, 32 << 10, 64 << 10, 128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20}

func validMetadataSize(n uint64) bool {
	for _, s := range metadataSizes {
		if n == s {
			return true
		}
	}
	return false
}

// Header is a parsed LUKS2 header: the binary fields shared by both copies
// and the JSON metadata. It also says which copy was found damaged.
type Header struct {
	UUID      string
	Label     string
	Subsystem string
	// SeqID counts header writes (cryptsetup shows it as "Epoch").
	SeqID uint64
	// MetadataSize is one header copy (hdr_size); the JSON area is
	// MetadataSize-4096 bytes.
	MetadataSize uint64
	// PrimaryErr and SecondaryErr are nil for a good copy and say why a
	// copy was not used otherwise (damaged, missing, or older than the
	// other). Either being set means NeedsRepair.
	PrimaryErr, SecondaryErr error

	salts   [2][lenSalt]byte
	md      *metadata
	rawJSON []byte // the JSON text of the copy in use, for Repair
}

// NeedsRepair reports whether one header copy is damaged or stale.
func (h *Header) NeedsRepair() bool { return h.PrimaryErr != nil || h.SecondaryErr != nil }

// headerCopy is one copy as found on disk.
type headerCopy struct {
	hdrSize   uint64
	seqID     uint64
	label     string
	subsystem string
	uuid      string
	salt      [lenSalt]byte
	md        *metadata
	rawJSON   []byte
}

var errStale = errors.New("older than the other copy")

// ReadHeader reads both header copies and returns the newest valid one.
// With a damaged primary the secondary is used (and NeedsRepair is true);
// with both damaged the error wraps ErrCorrupt, and a device with no LUKS2
// magic at all gives ErrNotLUKS2.
func ReadHeader(dev io.ReaderAt) (*Header, error) {
	p, perr := readCopy(dev, 0, magicPrimary)
	var s *headerCopy
	var serr error
	if perr == nil {
		s, serr = readCopy(dev, p.hdrSize, magicSecondary)
	} else {
		// The primary's hdr_size is not trustworthy, so probe every place
		// a secondary may be, as cryptsetup does.
		serr = fmt.Errorf("secondary: %w", errNoMagic)
		for _, off := range metadataSizes {
			c, err := readCopy(dev, off, magicSecondary)
			if err == nil {
				s, serr = c, nil
				break
			}
			if !errors.Is(err, errNoMagic) {
				serr = err
			}
		}
	}

	h := &Header{}
	var use *headerCopy
	switch {
	case perr == nil && serr == nil:
		switch {
		case s.seqID > p.seqID:
			use, h.PrimaryErr = s, errStale
		case p.seqID > s.seqID:
			use, h.SecondaryErr = p, errStale
		default:
			use = p
		}
	case perr == nil:
		use, h.SecondaryErr = p, serr
	case serr == nil:
		use, h.PrimaryErr = s, perr
	case errors.Is(perr, ErrNotLUKS2) && errors.Is(serr, errNoMagic):
		return nil, fmt.Errorf("luks2: %w", perr)
	case errors.Is(perr, errNoMagic) && errors.Is(serr, errNoMagic):
		return nil, fmt.Errorf("luks2: %w", ErrNotLUKS2)
	default:
		return nil, fmt.Errorf("luks2: %w: primary: %v; secondary: %v", ErrCorrupt, perr, serr)
	}
	if p != nil {
		h.salts[0] = p.salt
	} else {
		h.salts[0] = newSalt()
	}
	if s != nil {
		h.salts[1] = s.salt
	} else {
		h.salts[1] = newSalt()
	}
	h.UUID, h.Label, h.Subsystem = use.uuid, use.label, use.subsystem
	h.SeqID, h.MetadataSize, h.md, h.rawJSON = use.seqID, use.hdrSize, use.md, use.rawJSON
	return h, nil
}

var errNoMagic = errors.New("no LUKS2 magic")

// readCopy reads and checks one header copy at off: magic, version, size,
// self-declared offset, checksum, then the JSON metadata.
func readCopy(dev io.ReaderAt, off uint64, magic string) (*headerCopy, error) {
	bin := make([]byte, binHeaderSize)
	if err := readFull(dev, bin, off); err != nil {
		return nil, fmt.Errorf("at %d: %w", off, errNoMagic)
	}
	if string(bin[offMagic:offMagic+6]) != magic {
		return nil, fmt.Errorf("at %d: %w", off, errNoMagic)
	}
	if v := binary.BigEndian.Uint16(bin[offVersion:]); v != 2 {
		if v == 1 && magic == magicPrimary {
			return nil, fmt.Errorf("at %d: LUKS1: %w", off, ErrNotLUKS2)
		}
		return nil, fmt.Errorf("at %d: version %d", off, v)
	}
	c := &headerCopy{
		hdrSize:   binary.BigEndian.Uint64(bin[offHdrSize:]),
		seqID:     binary.BigEndian.Uint64(bin[offSeqID:]),
		label:     cString(bin[offLabel : offLabel+lenLabel]),
		subsystem: cString(bin[offSubsystem : offSubsystem+lenLabel]),
		uuid:      cString(bin[offUUID : offUUID+lenUUID]),
	}
	copy(c.salt[:], bin[offSalt:])
	if !validMetadataSize(c.hdrSize) {
		return nil, fmt.Errorf("at %d: bad hdr_size %d", off, c.hdrSize)
	}
	if hdrOff := binary.BigEndian.Uint64(bin[offHdrOffset:]); hdrOff != off {
		return nil, fmt.Errorf("at %d: hdr_offset says %d", off, hdrOff)
	}
	if magic == magicSecondary && c.hdrSize != off {
		return nil, fmt.Errorf("at %d: hdr_size %d does not match the secondary offset", off, c.hdrSize)
	}
	alg := cString(bin[offCsumAlg : offCsumAlg+lenCsumAlg])
	newHash := hashFunc(alg)
	if newHash == nil {
		return nil, fmt.Errorf("at %d: checksum algorithm %q: %w", off, alg, ErrUnsupported)
	}
	area := make([]byte, c.hdrSize)
	copy(area, bin)
	if err := readFull(dev, area[binHeaderSize:], off+binHeaderSize); err != nil {
		return nil, fmt.Errorf("at %d: reading JSON area: %w", off, err)
	}
	want := make([]byte, lenCsum)
	copy(want, area[offCsum:offCsum+lenCsum])
	clear(area[offCsum : offCsum+lenCsum])
	hh := newHash()
	hh.Write(area)
	sum := hh.Sum(nil)
	if subtle.ConstantTimeCompare(sum, want[:len(sum)]) != 1 {
		return nil, fmt.Errorf("at %d: checksum mismatch", off)
	}
	js := area[binHeaderSize:]
	end := bytes.IndexByte(js, 0)
	if end < 0 {
		return nil, fmt.Errorf("at %d: JSON area is not NUL-terminated", off)
	}
	md, err := parseMetadata(js[:end], c.hdrSize)
	if err != nil {
		return nil, fmt.Errorf("at %d: %w", off, err)
	}
	c.md, c.rawJSON = md, js[:end]
	return c, nil
}

// write stores the metadata in both copies with the next seqid. The primary
// goes first: if the write is torn, the copy not being written is intact and
// ReadHeader falls back to it.
func (h *Header) write(dev Device) error {
	js, err := h.md.marshal()
	if err != nil {
		return fmt.Errorf("luks2: encoding metadata: %w", err)
	}
	if uint64(len(js)) >= h.MetadataSize-binHeaderSize {
		return fmt.Errorf("luks2: metadata (%d bytes) does not fit the %d-byte JSON area", len(js), h.MetadataSize-binHeaderSize)
	}
	h.SeqID++
	h.rawJSON = js
	return h.writeCopies(dev, true, true)
}

// repair rewrites only the copies found bad, with the good copy's JSON text
// and seqid and a fresh salt for each rewritten copy: byte for byte what
// cryptsetup repair writes, apart from the random salt.
func (h *Header) repair(dev Device) error {
	p, s := h.PrimaryErr != nil, h.SecondaryErr != nil
	if p {
		h.salts[0] = newSalt()
	}
	if s {
		h.salts[1] = newSalt()
	}
	return h.writeCopies(dev, p, s)
}

func (h *Header) writeCopies(dev Device, primary, secondary bool) error {
	for i, off := range []uint64{0, h.MetadataSize} {
		if i == 0 && !primary || i == 1 && !secondary {
			continue
		}
		magic := magicPrimary
		if i == 1 {
			magic = magicSecondary
		}
		buf := h.encodeCopy(magic, off, h.salts[i], h.rawJSON)
		if _, err := dev.WriteAt(buf, int64(off)); err != nil {
			return fmt.Errorf("luks2: writing header copy at %d: %w", off, err)
		}
	}
	if s, ok := dev.(interface{ Sync() error }); ok {
		if err := s.Sync(); err != nil {
			return fmt.Errorf("luks2: sync: %w", err)
		}
	}
	h.PrimaryErr, h.SecondaryErr = nil, nil
	return nil
}

func (h *Header) encodeCopy(magic string, off uint64, salt [lenSalt]byte, js []byte) []byte {
	buf := make([]byte, h.MetadataSize)
	copy(buf[offMagic:], magic)
	binary.BigEndian.PutUint16(buf[offVersion:], 2)
	binary.BigEndian.PutUint64(buf[offHdrSize:], h.MetadataSize)
	binary.BigEndian.PutUint64(buf[offSeqID:], h.SeqID)
	putCString(buf[offLabel:offLabel+lenLabel], h.Label)
	putCString(buf[offCsumAlg:offCsumAlg+lenCsumAlg], "sha256")
	copy(buf[offSalt:offSalt+lenSalt], salt[:])
	putCString(buf[offUUID:offUUID+lenUUID], h.UUID)
	putCString(buf[offSubsystem:offSubsystem+lenLabel], h.Subsystem)
	binary.BigEndian.PutUint64(buf[offHdrOffset:], off)
	copy(buf[binHeaderSize:], js)
	sum := sha256.Sum256(buf)
	copy(buf[offCsum:], sum[:])
	return buf
}

// readFull accepts io.EOF together with a full buffer, which io.ReaderAt
// allows at the end of the device.
func readFull(dev io.ReaderAt, buf []byte, off uint64) error {
	if off > 1<<62 {
		return io.ErrUnexpectedEOF
	}
	n, err := dev.ReadAt(buf, int64(off))
	if n == len(buf) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

func newSalt() (s [lenSalt]byte) {
	rand.Read(s[:])
	return s
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// putCString keeps the last byte NUL so the field is always terminated.
func putCString(dst []byte, s string) {
	clear(dst)
	copy(dst[:len(dst)-1], s)
}

// hashFunc maps LUKS2 hash names to constructors; nil means unsupported.
func hashFunc(name string) func() hash.Hash {
	switch name {
	case "sha1":
		return sha1.New
	case "sha256":
		return sha256.New
	case "sha512":
		return sha512.New
	}
	return nil
}
