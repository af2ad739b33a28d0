package logring

import (
	"bytes"
	"io"
)

// ReadOptions choose where a reader starts and whether it waits for more.
type ReadOptions struct {
	// TailLines starts the reader this many lines before the end; -1 (any
	// negative value) starts at the oldest retained data and 0 at the end.
	// An unterminated last line counts as a line.
	TailLines int
	// Follow makes Read wait for new data instead of returning io.EOF.
	Follow bool
}

// Reader returns a reader over the ring. Each reader has its own position;
// one that falls behind a wrapping writer skips to the oldest retained
// data, so it may lose lines but never returns overwritten bytes. Reads
// end at line boundaries where the buffer allows it; if a skip cuts a line
// that was partly returned, the reader returns a newline first.
func (r *Ring) Reader(opts ReadOptions) io.ReadCloser {
	r.mu.Lock()
	defer r.mu.Unlock()

	return &reader{r: r, pos: r.tailStart(opts.TailLines), follow: opts.Follow}
}

// tailStart finds the offset n lines before the end. Caller holds mu.
func (r *Ring) tailStart(n int) uint64 {
	switch {
	case n < 0:
		return r.start
	case n == 0:
		return r.end
	}

	x := r.end
	if x > r.start && r.buf[(x-1)%uint64(len(r.buf))] == '\n' {
		x-- // the final newline ends the last line rather than starting another
	}

	for x > r.start {
		seg := r.segmentBefore(x)
		i := bytes.LastIndexByte(seg, '\n')

		if i < 0 {
			x -= uint64(len(seg))
			continue
		}

		x -= uint64(len(seg) - i) // x is now the offset of the newline

		if n--; n == 0 {
			return x + 1
		}
	}

	return r.start
}

// segmentBefore returns the longest contiguous retained slice that ends
// just before x.
func (r *Ring) segmentBefore(x uint64) []byte {
	size := uint64(len(r.buf))
	j := (x-1)%size + 1
	i := uint64(0)

	if avail := x - r.start; avail < j {
		i = j - avail
	}

	return r.buf[i:j]
}

type reader struct {
	r      *Ring
	pos    uint64
	follow bool
	// Guarded by r.mu.
	closed  bool
	midLine bool // the last byte returned was not a newline
}

// Read returns retained bytes from the reader's position. A following
// reader blocks until there is more, the ring is closed (io.EOF once
// drained) or the reader itself is closed (io.EOF at once).
func (rd *reader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}

	r := rd.r

	r.mu.Lock()
	defer r.mu.Unlock()

	for {
		if rd.closed {
			return 0, io.EOF
		}

		if rd.pos < r.start {
			rd.pos = r.start

			// What was returned last is the start of a line whose rest
			// is lost: end it, so that line-oriented consumers see the
			// fragment as a line of its own and not glued to the next.
			if rd.midLine {
				rd.midLine = false
				b[0] = '\n'

				return 1, nil
			}
		}

		if rd.pos < r.end {
			n := r.copyOut(b, rd.pos)

			// Stop after the last whole line, so a reader that falls
			// behind loses whole lines. A chunk without any newline
			// (a long line, a short buffer, an unterminated tail) is
			// returned as is.
			if i := bytes.LastIndexByte(b[:n], '\n'); i >= 0 {
				n = i + 1
			}

			rd.pos += uint64(n)
			rd.midLine = b[n-1] != '\n'

			return n, nil
		}

		if !rd.follow || r.closed {
			return 0, io.EOF
		}

		r.cond.Wait()
	}
}

// Close ends the reader; a Read blocked in another goroutine returns.
func (rd *reader) Close() error {
	rd.r.mu.Lock()
	rd.closed = true
	rd.r.cond.Broadcast()
	rd.r.mu.Unlock()

	return nil
}
