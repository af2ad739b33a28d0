package luks2

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
)

// Defaults cryptsetup 2.x uses for LUKS2 (lib/luks2/luks2.h).
const (
	// DefaultDataOffset is where data starts with the default metadata and
	// keyslots sizes: two 16 KiB header copies plus 16 MiB-32 KiB of keyslots.
	DefaultDataOffset = 16 << 20
	// dataAlignment rounds a computed data offset, as cryptsetup does for
	// devices that report no larger optimal I/O size.
	dataAlignment = 1 << 20
)

// FormatOptions configures Format. The zero value gives what
// `cryptsetup luksFormat --type luks2` gives with its defaults, except
// SectorSize (cryptsetup picks 4096 for some devices; 512 is always safe).
type FormatOptions struct {
	Cipher     string // only CipherAESXTSPlain64, the default
	KeySize    int    // volume key in bits: 512 (default) or 256
	SectorSize int    // data encryption unit: 512 (default), 1024, 2048 or 4096

	Label, Subsystem string // at most 47 bytes each
	UUID             string // default: a random version 4 UUID

	// MetadataSize is one header copy, 16 KiB (default) to 4 MiB.
	MetadataSize uint64
	// KeyslotsSize is the keyslot area after the two header copies
	// (multiple of 4096, at most 128 MiB). By default it fills the space up
	// to DataOffset.
	KeyslotsSize uint64
	// DataOffset is where the data segment starts, in bytes. By default
	// 16 MiB, or, when only KeyslotsSize is given, the end of the keyslots
	// area rounded up to 1 MiB.
	DataOffset uint64
	// DetachedHeader: dev receives only the header, the data lives on
	// another device at DataOffset (default 0), like cryptsetup --header.
	DetachedHeader bool

	Slot  int   // keyslot for the passphrase (default 0)
	PBKDF PBKDF // the keyslot KDF; see PBKDF for defaults

	// DigestIterations is the volume-key digest's PBKDF2-SHA256 count;
	// 0 benchmarks 125 ms as cryptsetup does (minimum 1000).
	DigestIterations int
}

var uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// Format writes a new LUKS2 header with one keyslot holding passphrase.
// With volumeKey nil a random key of opts.KeySize is generated. It returns
// the volume key (the caller's or the new one), which the caller should zero.
// Everything from the start of dev to the end of the keyslots area is
// overwritten; data after DataOffset is left as is.
func Format(dev Device, volumeKey, passphrase []byte, opts FormatOptions) ([]byte, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	hdrEnd := 2*o.MetadataSize + o.KeyslotsSize
	if size, ok := deviceSize(dev); ok && !o.DetachedHeader && size < o.DataOffset+uint64(o.SectorSize) {
		return nil, fmt.Errorf("luks2: device of %d bytes has no room for data after offset %d", size, o.DataOffset)
	}
	generated := volumeKey == nil
	if generated {
		volumeKey = make([]byte, o.KeySize/8)
		rand.Read(volumeKey)
	} else if len(volumeKey) != o.KeySize/8 {
		return nil, fmt.Errorf("luks2: volume key is %d bits, options say %d", 8*len(volumeKey), o.KeySize)
	}
	fail := func(err error) ([]byte, error) {
		if generated {
			clear(volumeKey)
		}
		return nil, err
	}

	tweak := jsonU64(0)
	h := &Header{
		UUID: o.UUID, Label: o.Label, Subsystem: o.Subsystem,
		MetadataSize: o.MetadataSize,
		salts:        [2][lenSalt]byte{newSalt(), newSalt()},
		md: &metadata{
			Keyslots: map[int]*keyslot{},
			Tokens:   map[int]json.RawMessage{},
			Segments: map[int]*segment{0: {
				Type: "crypt", Offset: jsonU64(o.DataOffset), Size: segSize{Dynamic: true},
				IVTweak: &tweak, Encryption: o.Cipher, SectorSize: o.SectorSize,
			}},
			Digests: map[int]*digest{0: newDigest(volumeKey, o.DigestIterations)},
			Config: config{
				JSONSize:     jsonU64(o.MetadataSize - binHeaderSize),
				KeyslotsSize: jsonU64(o.KeyslotsSize),
			},
		},
	}
	// Old keyslots or an old header left in the area would confuse
	// blkid and, worse, could be found again by a recovery tool.
	zero := make([]byte, 1<<20)
	for off := uint64(0); off < hdrEnd; off += uint64(len(zero)) {
		n := min(uint64(len(zero)), hdrEnd-off)
		if _, err := dev.WriteAt(zero[:n], int64(off)); err != nil {
			return fail(fmt.Errorf("luks2: wiping header area: %w", err))
		}
	}
	if _, err := h.addKeyslot(dev, volumeKey, passphrase, o.Slot, o.PBKDF); err != nil {
		return fail(err)
	}
	if err := h.write(dev); err != nil {
		return fail(err)
	}
	return volumeKey, nil
}

// resolve applies defaults and checks the options.
func (o FormatOptions) resolve() (FormatOptions, error) {
	if o.Cipher == "" {
		o.Cipher = CipherAESXTSPlain64
	}
	if o.Cipher != CipherAESXTSPlain64 {
		return o, fmt.Errorf("luks2: cipher %q: %w", o.Cipher, ErrUnsupported)
	}
	if o.KeySize == 0 {
		o.KeySize = 512
	}
	if o.KeySize != 256 && o.KeySize != 512 {
		return o, fmt.Errorf("luks2: key size %d: aes-xts-plain64 takes 256 or 512 bits", o.KeySize)
	}
	if o.SectorSize == 0 {
		o.SectorSize = 512
	}
	switch o.SectorSize {
	case 512, 1024, 2048, 4096:
	default:
		return o, fmt.Errorf("luks2: sector size %d", o.SectorSize)
	}
	if len(o.Label) >= lenLabel || len(o.Subsystem) >= lenLabel {
		return o, fmt.Errorf("luks2: label and subsystem are at most %d bytes", lenLabel-1)
	}
	if o.UUID == "" {
		o.UUID = newUUID()
	}
	if !uuidRE.MatchString(o.UUID) {
		return o, fmt.Errorf("luks2: UUID %q is not in 8-4-4-4-12 form", o.UUID)
	}
	if o.MetadataSize == 0 {
		o.MetadataSize = DefaultMetadataSize
	}
	if !validMetadataSize(o.MetadataSize) {
		return o, fmt.Errorf("luks2: metadata size %d is not a power of two from 16 KiB to 4 MiB", o.MetadataSize)
	}
	meta := 2 * o.MetadataSize
	switch {
	case o.KeyslotsSize == 0 && (o.DataOffset == 0 || o.DetachedHeader):
		o.KeyslotsSize = DefaultDataOffset - meta
		if !o.DetachedHeader {
			o.DataOffset = DefaultDataOffset
		}
	case o.KeyslotsSize == 0:
		if o.DataOffset <= meta {
			return o, fmt.Errorf("luks2: data offset %d leaves no room for keyslots", o.DataOffset)
		}
		o.KeyslotsSize = (o.DataOffset - meta) / 4096 * 4096
	case o.DataOffset == 0 && !o.DetachedHeader:
		o.DataOffset = roundUp(meta+o.KeyslotsSize, dataAlignment)
	}
	if o.KeyslotsSize%4096 != 0 || o.KeyslotsSize > maxKeyslotsSize {
		return o, fmt.Errorf("luks2: keyslots size %d is not a multiple of 4096 up to 128 MiB", o.KeyslotsSize)
	}
	if !o.DetachedHeader && o.DataOffset < meta+o.KeyslotsSize {
		return o, fmt.Errorf("luks2: data offset %d is inside the header (%d bytes)", o.DataOffset, meta+o.KeyslotsSize)
	}
	if o.DataOffset%uint64(o.SectorSize) != 0 {
		return o, fmt.Errorf("luks2: data offset %d is not a multiple of the sector size %d", o.DataOffset, o.SectorSize)
	}
	if o.Slot < 0 || o.Slot >= MaxSlots {
		return o, fmt.Errorf("luks2: keyslot %d: out of range 0-%d", o.Slot, MaxSlots-1)
	}
	return o, nil
}

func newUUID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// deviceSize finds the size of a file or block device when dev is one.
// Block devices report size 0 from Stat, so they are measured by seeking,
// with the file offset put back for callers that use Read/Write too.
func deviceSize(dev any) (uint64, bool) {
	if st, ok := dev.(interface{ Stat() (os.FileInfo, error) }); ok {
		if fi, err := st.Stat(); err == nil && fi.Mode().IsRegular() {
			return uint64(fi.Size()), true
		}
	}
	if sk, ok := dev.(io.Seeker); ok {
		cur, err := sk.Seek(0, io.SeekCurrent)
		if err != nil {
			return 0, false
		}
		end, err := sk.Seek(0, io.SeekEnd)
		if _, err2 := sk.Seek(cur, io.SeekStart); err != nil || err2 != nil {
			return 0, false
		}
		return uint64(end), true
	}
	return 0, false
}
