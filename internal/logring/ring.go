// Package logring is the per-service log buffer behind `talosctl logs`: a
// fixed-size byte ring that writers never block on and that any number of
// readers can tail or follow.
package logring

import (
	"bytes"
	"errors"
	"sync"
)

// DefaultSize is the ring size used when New gets a non-positive size.
const DefaultSize = 1 << 20

// maxAlignScan bounds how far a wrapping Write looks for the next line
// start. Without the bound, output that never contains a newline would make
// every write scan the whole ring.
const maxAlignScan = 4096

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("log ring is closed")

// Ring keeps the most recent bytes written to it. It is safe for concurrent
// use; each Write is stored atomically, so lines written with one call each
// never interleave.
//
// Positions are absolute stream offsets: the ring holds [start, end) and
// byte x lives at buf[x%len(buf)]. Readers keep their own offset, so a
// reader that fell behind only has to compare it with start to know that
// its data was overwritten.
type Ring struct {
	mu   sync.Mutex
	cond sync.Cond // signalled on every write and close; L is &mu

	buf        []byte
	start, end uint64
	closed     bool
}

// New makes a ring holding size bytes (DefaultSize if size <= 0).
func New(size int) *Ring {
	if size <= 0 {
		size = DefaultSize
	}

	r := &Ring{buf: make([]byte, size)}
	r.cond.L = &r.mu

	return r
}

// Size is the capacity in bytes.
func (r *Ring) Size() int { return len(r.buf) }

// Write appends p, dropping the oldest data as needed. When old data is
// dropped, the rest of the line that was cut is dropped with it, so the
// ring starts at a whole line; a single line longer than the ring keeps
// only its tail. It never fails before Close and always consumes all of p.
func (r *Ring) Write(p []byte) (int, error) {
	n := len(p)

	r.mu.Lock()
	defer r.mu.Unlock()

	if r.closed {
		return 0, ErrClosed
	}

	if n == 0 {
		return 0, nil
	}

	size := uint64(len(r.buf))
	newEnd := r.end + uint64(n)

	if newEnd-r.start > size {
		// Align before copying: the byte preceding the cut is overwritten
		// by the copy below.
		r.start = r.alignedStart(newEnd-size, p)
	}

	// Bytes of p that do not fit can never be read; give them offsets
	// below start so the offset arithmetic stays uniform.
	off := r.end
	if uint64(n) > size {
		off = newEnd - size
		p = p[uint64(n)-size:]
	}

	i := int(off % size)
	c := copy(r.buf[i:], p)
	copy(r.buf, p[c:])

	r.end = newEnd
	r.cond.Broadcast()

	return n, nil
}

// alignedStart returns where the retained data should begin once the
// stream (old data followed by p) is cut at m: m itself if a line starts
// there, else just past the next newline, unless that newline ends the
// stream (the cut line is all that is left, so its tail is kept) or is
// further than maxAlignScan away.
func (r *Ring) alignedStart(m uint64, p []byte) uint64 {
	if r.byteAt(m-1, p) == '\n' {
		return m
	}

	last := r.end + uint64(len(p)) - 1 // a newline here would leave nothing
	limit := min(last, m+maxAlignScan)

	for x := m; x < limit; {
		seg := r.segment(x, limit, p)
		if i := bytes.IndexByte(seg, '\n'); i >= 0 {
			return x + uint64(i) + 1
		}

		x += uint64(len(seg))
	}

	return m
}

// byteAt reads the stream as it will be after appending p; x must be at
// or after start.
func (r *Ring) byteAt(x uint64, p []byte) byte {
	if x >= r.end {
		return p[x-r.end]
	}

	return r.buf[x%uint64(len(r.buf))]
}

// segment returns the longest contiguous slice of the stream (old data,
// then p) that begins at x and ends at or before limit.
func (r *Ring) segment(x, limit uint64, p []byte) []byte {
	if x >= r.end {
		return p[x-r.end : limit-r.end]
	}

	size := uint64(len(r.buf))
	i := x % size
	j := min(size, i+(min(limit, r.end)-x))

	return r.buf[i:j]
}

// Close makes further writes fail and ends every follower once it has
// read what is left.
func (r *Ring) Close() {
	r.mu.Lock()
	r.closed = true
	r.cond.Broadcast()
	r.mu.Unlock()
}

// Bytes returns a copy of everything retained.
func (r *Ring) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()

	out := make([]byte, r.end-r.start)
	r.copyOut(out, r.start)

	return out
}

// copyOut copies from offset pos into b and returns how many bytes it
// copied. pos must be in [start, end]. Caller holds mu.
func (r *Ring) copyOut(b []byte, pos uint64) int {
	size := uint64(len(r.buf))
	want := min(uint64(len(b)), r.end-pos)
	i := pos % size
	c := copy(b[:want], r.buf[i:])

	if uint64(c) < want {
		c += copy(b[c:want], r.buf)
	}

	return c
}
