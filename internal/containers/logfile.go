package containers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// pollInterval is how often a followed log file is looked at again once
// everything in it was read. CRI log files are plain files written by
// containerd; polling them costs a stat per interval and, unlike inotify,
// needs no watch descriptors (a limited resource) per follower.
var pollInterval = 250 * time.Millisecond

// OpenLog opens a CRI log file, positioned tailLines lines before its end
// (-1: at its start). Lines are returned as they are in the file:
// "<RFC3339Nano> stdout|stderr F|P <message>". With follow the reader
// waits for more at the end, follows the file across the kubelet's log
// rotation (rename, then a new file) and truncation, and ends (io.EOF)
// when ctx does.
func OpenLog(ctx context.Context, path string, tailLines int, follow bool) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errorf(ErrNotFound, "log file %s does not exist (yet)", path)
	}

	if err != nil {
		return nil, fmt.Errorf("open log: %w", err)
	}

	if tailLines >= 0 {
		if err := seekTail(f, tailLines); err != nil {
			f.Close()
			return nil, fmt.Errorf("log %s: %w", path, err)
		}
	}

	return &logReader{ctx: ctx, path: path, f: f, follow: follow}, nil
}

// tailBlock is how much of a file seekTail reads at a time.
const tailBlock = 32 << 10

// seekTail positions f at the start of its last n lines. A final
// newline ends the last line; a last line without one (being written)
// counts as a line.
func seekTail(f *os.File, n int) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}

	size := fi.Size()

	if n == 0 {
		_, err := f.Seek(size, io.SeekStart)
		return err
	}

	buf := make([]byte, tailBlock)
	found := 0

	for end := size; end > 0; {
		start := max(0, end-tailBlock)
		chunk := buf[:end-start]

		if _, err := f.ReadAt(chunk, start); err != nil && !errors.Is(err, io.EOF) {
			return err
		}

		for i := len(chunk) - 1; i >= 0; i-- {
			pos := start + int64(i)
			if chunk[i] != '\n' || pos == size-1 {
				continue
			}

			if found++; found == n {
				_, err := f.Seek(pos+1, io.SeekStart)
				return err
			}
		}

		end = start
	}

	_, err = f.Seek(0, io.SeekStart)

	return err
}

// logReader reads a log file, and with follow keeps reading it as it
// grows or is replaced.
type logReader struct {
	ctx    context.Context //nolint:containedctx // Read has no context of its own
	path   string
	f      *os.File
	follow bool
	timer  *time.Timer
}

func (r *logReader) Read(p []byte) (int, error) {
	for {
		n, err := r.f.Read(p)
		if n > 0 {
			return n, nil
		}

		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}

		if !r.follow || r.ctx.Err() != nil {
			return 0, io.EOF
		}

		switched, err := r.reopen()
		if err != nil {
			return 0, err
		}

		if switched {
			continue
		}

		if !r.wait() {
			return 0, io.EOF
		}
	}
}

// reopen, at the end of the file, moves to the file now at path if the
// log was rotated, or back to the start if it was truncated. Until
// containerd reopens the log after a rotation there may be no file at
// path; the old one is kept until then.
func (r *logReader) reopen() (bool, error) {
	cur, err := r.f.Stat()
	if err != nil {
		return false, err
	}

	fi, err := os.Stat(r.path)
	if err != nil {
		return false, nil //nolint:nilerr // rotated, the new file is not there yet
	}

	if !os.SameFile(cur, fi) {
		nf, err := os.Open(r.path)
		if err != nil {
			return false, nil //nolint:nilerr // as above
		}

		r.f.Close()
		r.f = nf

		return true, nil
	}

	off, err := r.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return false, err
	}

	if fi.Size() < off {
		_, err := r.f.Seek(0, io.SeekStart)
		return err == nil, err
	}

	return false, nil
}

// wait blocks for a poll interval; false when ctx ended first.
func (r *logReader) wait() bool {
	if r.timer == nil {
		r.timer = time.NewTimer(pollInterval)
	} else {
		r.timer.Reset(pollInterval)
	}

	select {
	case <-r.ctx.Done():
		return false
	case <-r.timer.C:
		return true
	}
}

func (r *logReader) Close() error {
	if r.timer != nil {
		r.timer.Stop()
	}

	return r.f.Close()
}
