package logring_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/logring"
)

func readAll(t *testing.T, r *logring.Ring, opts logring.ReadOptions) string {
	t.Helper()

	rd := r.Reader(opts)
	defer rd.Close()

	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("read: %v", err)
	}

	return string(b)
}

func write(t *testing.T, w io.Writer, s string) {
	t.Helper()

	if n, err := io.WriteString(w, s); err != nil || n != len(s) {
		t.Fatalf("write %q: n=%d err=%v", s, n, err)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		writes []string
		want   string
	}{
		{"fits", 16, []string{"a\n", "bb\n"}, "a\nbb\n"},
		{"exactly full", 6, []string{"ab\n", "cd\n"}, "ab\ncd\n"},
		{"drops whole oldest line", 10, []string{"aaaa\n", "bbbb\n", "cc\n"}, "bbbb\ncc\n"},
		{"drops several lines", 10, []string{"a\n", "b\n", "c\n", "d\n", "eeeeeee\n"}, "d\neeeeeee\n"},
		{"cut lands on a line start", 6, []string{"ab\n", "cd\n", "ef\n"}, "cd\nef\n"},
		{"unterminated tail survives", 8, []string{"aaa\n", "bbb\n", "cc"}, "bbb\ncc"},
		{"long line keeps its tail", 8, []string{"a\n", "0123456789abc\n"}, "6789abc\n"},
		{"long write keeps last lines", 8, []string{"l1\nl2\nl3\nl4\n"}, "l3\nl4\n"},
		{"long line without newline", 4, []string{"abcdefghij"}, "ghij"},
		{"one write split across the edge", 8, []string{"abcde\n", "xyz\n"}, "xyz\n"},
		{"many wraps", 7, []string{"1\n", "22\n", "333\n", "4444\n", "55\n", "6\n"}, "55\n6\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := logring.New(tc.size)
			for _, w := range tc.writes {
				write(t, r, w)
			}

			if got := readAll(t, r, logring.ReadOptions{TailLines: -1}); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}

			if got := string(r.Bytes()); got != tc.want {
				t.Errorf("Bytes() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int
		content []string
		tail    int
		want    string
	}{
		{"all", 64, []string{"a\nb\nc\n"}, -1, "a\nb\nc\n"},
		{"zero", 64, []string{"a\nb\nc\n"}, 0, ""},
		{"one", 64, []string{"a\nb\nc\n"}, 1, "c\n"},
		{"two", 64, []string{"a\nb\nc\n"}, 2, "b\nc\n"},
		{"more than there are", 64, []string{"a\nb\n"}, 10, "a\nb\n"},
		{"unterminated last line", 64, []string{"a\nb\nc"}, 1, "c"},
		{"unterminated counts as one", 64, []string{"a\nb\nc"}, 2, "b\nc"},
		{"empty ring", 64, nil, 3, ""},
		{"after wrap", 12, []string{"111\n", "222\n", "333\n", "444\n"}, 2, "333\n444\n"},
		{"newline at the buffer edge", 8, []string{"aa\n", "bbb\n", "c\n", "d\n"}, 2, "c\nd\n"},
		{"scan crosses the buffer edge", 9, []string{"aaaaaaa\n", "bb\n", "cc\n", "d\n"}, 3, "bb\ncc\nd\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := logring.New(tc.size)
			for _, w := range tc.content {
				write(t, r, w)
			}

			if got := readAll(t, r, logring.ReadOptions{TailLines: tc.tail}); got != tc.want {
				t.Errorf("tail %d: got %q, want %q", tc.tail, got, tc.want)
			}
		})
	}
}

// readResult is one Read done in another goroutine, so the test can wait
// for it with a deadline.
type readResult struct {
	s   string
	err error
}

func readAsync(rd io.Reader, buf []byte) <-chan readResult {
	ch := make(chan readResult, 1)

	go func() {
		n, err := rd.Read(buf)
		ch <- readResult{string(buf[:n]), err}
	}()

	return ch
}

func await(t *testing.T, ch <-chan readResult) readResult {
	t.Helper()

	select {
	case res := <-ch:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for Read")
	}

	return readResult{}
}

func TestFollowSeesNewWrites(t *testing.T) {
	r := logring.New(64)
	write(t, r, "old\n")

	rd := r.Reader(logring.ReadOptions{TailLines: 0, Follow: true})
	defer rd.Close()

	buf := make([]byte, 64)
	pending := readAsync(rd, buf)

	select {
	case res := <-pending:
		t.Fatalf("Read returned %q, %v before anything was written", res.s, res.err)
	default:
	}

	write(t, r, "new\n")

	if res := await(t, pending); res.err != nil || res.s != "new\n" {
		t.Fatalf("got %q, %v; want %q", res.s, res.err, "new\n")
	}
}

func TestCloseUnblocksReaders(t *testing.T) {
	t.Run("reader close", func(t *testing.T) {
		r := logring.New(64)
		rd := r.Reader(logring.ReadOptions{TailLines: -1, Follow: true})
		pending := readAsync(rd, make([]byte, 8))

		if err := rd.Close(); err != nil {
			t.Fatal(err)
		}

		if res := await(t, pending); !errors.Is(res.err, io.EOF) {
			t.Fatalf("got %q, %v; want io.EOF", res.s, res.err)
		}
	})

	t.Run("ring close drains then EOF", func(t *testing.T) {
		r := logring.New(64)
		rd := r.Reader(logring.ReadOptions{TailLines: -1, Follow: true})
		defer rd.Close()

		write(t, r, "last\n")
		r.Close()

		b, err := io.ReadAll(rd)
		if err != nil || string(b) != "last\n" {
			t.Fatalf("got %q, %v", b, err)
		}

		if _, err := r.Write([]byte("x")); !errors.Is(err, logring.ErrClosed) {
			t.Fatalf("write after close: %v, want ErrClosed", err)
		}
	})

	t.Run("ring close while blocked", func(t *testing.T) {
		r := logring.New(64)
		rd := r.Reader(logring.ReadOptions{Follow: true})
		defer rd.Close()

		pending := readAsync(rd, make([]byte, 8))
		r.Close()

		if res := await(t, pending); !errors.Is(res.err, io.EOF) {
			t.Fatalf("got %q, %v; want io.EOF", res.s, res.err)
		}
	})
}

func line(i int) string { return fmt.Sprintf("line %06d %s\n", i, strings.Repeat("x", i%17)) }

// checkLines asserts that s is whole lines as made by line, consecutive
// and ending with last.
func checkLines(t *testing.T, s string, last int) {
	t.Helper()

	sc := bufio.NewScanner(strings.NewReader(s))
	prev := -1

	for sc.Scan() {
		var i int
		if _, err := fmt.Sscanf(sc.Text(), "line %06d", &i); err != nil || sc.Text()+"\n" != line(i) {
			t.Fatalf("garbage line %q", sc.Text())
		}

		if prev >= 0 && i != prev+1 {
			t.Fatalf("line %d follows line %d", i, prev)
		}

		prev = i
	}

	if prev != last {
		t.Fatalf("last line is %d, want %d", prev, last)
	}
}

func TestSlowFollowerAfterWrap(t *testing.T) {
	r := logring.New(256)
	rd := r.Reader(logring.ReadOptions{TailLines: -1, Follow: true})

	defer rd.Close()

	for i := range 5 {
		write(t, r, line(i))
	}

	// Read a little, then fall far behind: the writer wraps many times.
	first := make([]byte, 10)
	if n, err := rd.Read(first); err != nil || string(first[:n]) != line(0)[:10] {
		t.Fatalf("first read: %q, %v", first[:n], err)
	}

	const last = 500
	for i := 5; i <= last; i++ {
		write(t, r, line(i))
	}

	r.Close()

	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}

	// The torn first line is ended, then the retained lines follow whole.
	if want := append([]byte("\n"), r.Bytes()...); !bytes.Equal(rest, want) {
		t.Fatalf("follower read %q, want %q", rest, want)
	}

	checkLines(t, string(rest[1:]), last)
}

func TestConcurrentWriters(t *testing.T) {
	r := logring.New(4096)
	follower := r.Reader(logring.ReadOptions{TailLines: -1, Follow: true})

	var (
		wg       sync.WaitGroup
		followed []byte
		readErr  error
	)

	// A buffer larger than any line: every Read ends on a line boundary,
	// so whatever the follower loses, it loses whole lines.
	wg.Go(func() {
		buf := make([]byte, 1024)

		for {
			n, err := follower.Read(buf)
			followed = append(followed, buf[:n]...)

			if err != nil {
				if !errors.Is(err, io.EOF) {
					readErr = err
				}

				return
			}
		}
	})

	var writers sync.WaitGroup

	for w := range 8 {
		writers.Go(func() {
			for i := range 300 {
				fmt.Fprintf(r, "writer %d entry %04d %s\n", w, i, strings.Repeat("y", (w+i)%40))
			}
		})
	}

	writers.Wait()
	r.Close()
	wg.Wait()

	if readErr != nil {
		t.Fatal(readErr)
	}

	for _, s := range []string{string(r.Bytes()), string(followed)} {
		for l := range strings.Lines(s) {
			var w, i int
			if _, err := fmt.Sscanf(l, "writer %d entry %04d", &w, &i); err != nil ||
				l != fmt.Sprintf("writer %d entry %04d %s\n", w, i, strings.Repeat("y", (w+i)%40)) {
				t.Fatalf("garbage line %q", l)
			}
		}
	}
}

func TestSkipEndsTornLine(t *testing.T) {
	r := logring.New(16)
	write(t, r, "abcdefgh\n")

	rd := r.Reader(logring.ReadOptions{TailLines: -1})
	defer rd.Close()

	// A short buffer returns part of a line; then the line is overwritten.
	buf := make([]byte, 4)
	if n, _ := rd.Read(buf); string(buf[:n]) != "abcd" {
		t.Fatalf("first read %q", buf[:n])
	}

	write(t, r, "11\n22\n33\n44\n")

	rest, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}

	if want := "\n11\n22\n33\n44\n"; string(rest) != want {
		t.Fatalf("after the skip: %q, want %q", rest, want)
	}
}

func TestReadsEndAtLineBoundaries(t *testing.T) {
	r := logring.New(64)
	write(t, r, "one\ntwo\nthr")

	rd := r.Reader(logring.ReadOptions{TailLines: -1})
	defer rd.Close()

	buf := make([]byte, 64)

	var got []string

	for {
		n, err := rd.Read(buf)
		if err != nil {
			break
		}

		got = append(got, string(buf[:n]))
	}

	if want := []string{"one\ntwo\n", "thr"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("reads %q, want %q", got, want)
	}
}

func TestDefaultSize(t *testing.T) {
	if got := logring.New(0).Size(); got != logring.DefaultSize {
		t.Fatalf("New(0).Size() = %d, want %d", got, logring.DefaultSize)
	}
}

func BenchmarkWrite(b *testing.B) {
	r := logring.New(logring.DefaultSize)
	msg := []byte("2026-01-02T15:04:05.000Z info service started: listening on 0.0.0.0:50000 with 4 workers\n")

	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()

	for b.Loop() {
		if _, err := r.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
}
