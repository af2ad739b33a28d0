package meta

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
)

// MinSize is the smallest partition that holds both formats without
// overlap.
const MinSize = ADVSize + LegacySize

// Errors a caller can tell apart with errors.Is.
var (
	// ErrCorrupt: no copy of the Talos ADV is good, and the partition is
	// not blank either.
	ErrCorrupt = errors.New("META is corrupt")
	// ErrInvalidTag: tag 0 marks the end of the records and cannot be a key.
	ErrInvalidTag = errors.New("invalid META tag")
	// ErrTooSmall: the partition cannot hold META.
	ErrTooSmall = errors.New("partition too small for META")
)

// Damage is a copy of the Talos ADV that failed its checks (or, second
// copy only, differs from a good first one) and is rewritten from the
// good one on the next Flush.
type Damage struct {
	Copy   int // 1 or 2
	Reason string
}

func (d Damage) String() string { return fmt.Sprintf("copy %d: %s", d.Copy, d.Reason) }

// Meta is the content of a META partition. It is not safe for concurrent
// use; Edit serializes processes (and goroutines) on the partition itself.
type Meta struct {
	tags    map[uint8][]byte
	legacy  legacyADV
	damaged []Damage
	blank   bool
	dirty   bool

	size int64
	// where Flush writes: a path opened for each flush, or a file the
	// caller owns.
	path string
	file *os.File
}

// New is an empty META for a partition of size bytes, as a fresh install
// writes it.
func New(size int64) (*Meta, error) {
	if size < MinSize {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", ErrTooSmall, size, MinSize)
	}

	return &Meta{tags: map[uint8][]byte{}, legacy: legacyADV{raw: make([]byte, LegacySize)}, size: size, dirty: true}, nil
}

// Decode reads a whole partition image.
func Decode(image []byte) (*Meta, error) {
	return decode(bytes.NewReader(image), int64(len(image)))
}

// decode reads the META of a partition of size bytes from r.
func decode(r io.ReaderAt, size int64) (*Meta, error) {
	if size < MinSize {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", ErrTooSmall, size, MinSize)
	}

	adv := make([]byte, ADVSize)
	if _, err := r.ReadAt(adv, 0); err != nil {
		return nil, fmt.Errorf("read META: %w", err)
	}

	legacy := make([]byte, LegacySize)
	if _, err := r.ReadAt(legacy, size-LegacySize); err != nil {
		return nil, fmt.Errorf("read META: %w", err)
	}

	m := &Meta{legacy: decodeLegacy(legacy), size: size}

	c1, c2 := adv[:CopySize], adv[CopySize:]
	t1, err1 := decodeCopy(c1)
	t2, err2 := decodeCopy(c2)

	switch {
	case err1 == nil:
		m.tags = t1
		if err2 != nil {
			m.damaged = []Damage{{2, reason(c2, err2)}}
		} else if !bytes.Equal(c1, c2) {
			// A write torn between the copies: the first is the newer.
			m.damaged = []Damage{{2, "good, but differs from copy 1"}}
		}
	case err2 == nil:
		m.tags = t2
		m.damaged = []Damage{{1, reason(c1, err1)}}
	case isZero(adv):
		// Never written: what an install leaves before the first flush.
		m.tags, m.blank = map[uint8][]byte{}, true
	default:
		return nil, fmt.Errorf("%w: no good copy of the Talos ADV: copy 1: %s; copy 2: %s", ErrCorrupt, reason(c1, err1), reason(c2, err2))
	}

	return m, nil
}

func reason(c []byte, err error) string {
	if isZero(c) {
		return "blank (all zeros)"
	}

	return err.Error()
}

// Encode is the partition image Flush would write, with zeros between
// the two formats.
func (m *Meta) Encode() ([]byte, error) {
	adv, err := m.encodeADV()
	if err != nil {
		return nil, err
	}

	img := make([]byte, m.size)
	copy(img, adv)
	copy(img[m.size-LegacySize:], m.legacy.bytes())

	return img, nil
}

// encodeADV is both copies of the Talos ADV.
func (m *Meta) encodeADV() ([]byte, error) {
	c, err := encodeCopy(m.tags)
	if err != nil {
		return nil, err
	}

	return append(c, c...), nil
}

// ReadTag returns a tag's value: from the Talos ADV, else from the
// syslinux one (where Talos before 1.4 kept its tags).
func (m *Meta) ReadTag(tag uint8) ([]byte, bool) {
	if v, ok := m.tags[tag]; ok {
		return bytes.Clone(v), true
	}

	v, ok := m.legacy.read(tag)

	return bytes.Clone(v), ok
}

// List is the tags of the Talos ADV in order, as Talos mirrors them.
func (m *Meta) List() []uint8 { return slices.Sorted(maps.Keys(m.tags)) }

// Values is every tag of the Talos ADV with its value.
func (m *Meta) Values() map[uint8][]byte {
	out := make(map[uint8][]byte, len(m.tags))
	for t, v := range m.tags {
		out[t] = bytes.Clone(v)
	}

	return out
}

// SetTag stores value under tag in the Talos ADV. changed is false when it
// held that value already. A value that would not fit is refused with
// ErrOverflow, and nothing changes.
func (m *Meta) SetTag(tag uint8, value []byte) (changed bool, err error) {
	if tag == 0 {
		return false, fmt.Errorf("%w: 0x00 is the end marker", ErrInvalidTag)
	}

	old, had := m.tags[tag]
	if had && bytes.Equal(old, value) {
		return false, nil
	}

	before := used(m.tags)
	after := before + len(value) - len(old)

	if !had {
		after += recordHdr
	}

	// Changes that do not grow the store always pass, so a store filled
	// by Talos's slightly looser count can still be edited.
	if after > capacity && after > before {
		return false, fmt.Errorf("set tag %s: %w: %d bytes used of %d, the value needs %d more",
			TagID(tag), ErrOverflow, before, capacity, after-before)
	}

	m.tags[tag] = bytes.Clone(value)
	m.dirty = true

	return true, nil
}

// DeleteTag removes tag from both ADVs; it reports whether either held it.
func (m *Meta) DeleteTag(tag uint8) bool {
	_, had := m.tags[tag]
	delete(m.tags, tag)

	found := m.legacy.delete(tag) || had
	m.dirty = m.dirty || found

	return found
}

// Damaged lists the copies Flush will repair; empty once flushed.
func (m *Meta) Damaged() []Damage { return slices.Clone(m.damaged) }

// Blank says the partition was never written (all zeros).
func (m *Meta) Blank() bool { return m.blank }

// Free is how many more bytes of values (new records' headers included)
// the store takes.
func (m *Meta) Free() int { return max(capacity-used(m.tags), 0) }
