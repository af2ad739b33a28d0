package containers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// criLines are n CRI log lines, as containerd writes them.
func criLines(from, n int) string {
	var sb strings.Builder

	for i := from; i < from+n; i++ {
		stream := "stdout"
		if i%2 == 1 {
			stream = "stderr"
		}

		fmt.Fprintf(&sb, "2026-01-02T03:04:%02d.123456789Z %s F line %d\n", i%60, stream, i)
	}

	return sb.String()
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()

	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, content string) {
	t.Helper()

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := f.WriteString(content); err != nil {
		t.Fatal(err)
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestOpenLogTail(t *testing.T) {
	// Longer than tailBlock, so the backwards scan crosses blocks.
	many := criLines(0, 2000)
	lines := strings.SplitAfter(many, "\n")
	lines = lines[:len(lines)-1]

	tests := []struct {
		name    string
		content string
		tail    int
		want    string
	}{
		{name: "all", content: many, tail: -1, want: many},
		{name: "none", content: many, tail: 0, want: ""},
		{name: "last 3", content: many, tail: 3, want: strings.Join(lines[len(lines)-3:], "")},
		{name: "across blocks", content: many, tail: 1500, want: strings.Join(lines[500:], "")},
		{name: "more than there are", content: criLines(0, 2), tail: 10, want: criLines(0, 2)},
		{name: "partial last line counts", content: criLines(0, 3) + "2026-01-02T03:04:05Z stdout P half", tail: 2, want: criLines(2, 1) + "2026-01-02T03:04:05Z stdout P half"},
		{name: "empty file", content: "", tail: 5, want: ""},
		{name: "blank lines are lines", content: "a\n\n\nb\n", tail: 2, want: "\nb\n"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "0.log")
			writeFile(t, path, tt.content)

			r, err := OpenLog(t.Context(), path, tt.tail, false)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()

			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}

			if string(got) != tt.want {
				t.Errorf("got %d bytes %q..., want %d bytes %q...", len(got), head(string(got)), len(tt.want), head(tt.want))
			}
		})
	}
}

func head(s string) string { return s[:min(len(s), 80)] }

func TestOpenLogMissing(t *testing.T) {
	_, err := OpenLog(t.Context(), filepath.Join(t.TempDir(), "nope.log"), -1, false)
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("got %v, want ErrNotFound", err)
	}
}

// lineReader reads lines from a followed log in the background.
type lineReader struct {
	lines chan string
	done  chan error
}

func readLines(r io.Reader) *lineReader {
	lr := &lineReader{lines: make(chan string, 100), done: make(chan error, 1)}

	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			lr.lines <- sc.Text()
		}

		lr.done <- sc.Err()
	}()

	return lr
}

// expect waits for the next lines to be want.
func (lr *lineReader) expect(t *testing.T, want ...string) {
	t.Helper()

	deadline := time.After(10 * time.Second)

	for _, w := range want {
		select {
		case got := <-lr.lines:
			if !strings.HasSuffix(got, w) {
				t.Fatalf("got line %q, want one ending in %q", got, w)
			}
		case <-deadline:
			t.Fatalf("no line ending in %q within 10s", w)
		}
	}
}

func TestOpenLogFollow(t *testing.T) {
	pollInterval = 10 * time.Millisecond

	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	writeFile(t, path, criLines(0, 5))

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	r, err := OpenLog(ctx, path, 2, true)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	lr := readLines(r)
	lr.expect(t, "line 3", "line 4")

	// Growth.
	appendFile(t, path, criLines(5, 2))
	lr.expect(t, "line 5", "line 6")

	// The kubelet's rotation: the file is renamed, containerd keeps
	// writing the old one until it reopens the path.
	if err := os.Rename(path, path+".20260102-030405"); err != nil {
		t.Fatal(err)
	}

	appendFile(t, path+".20260102-030405", criLines(7, 1))
	lr.expect(t, "line 7")

	appendFile(t, path, criLines(8, 2))
	lr.expect(t, "line 8", "line 9")

	// Truncation starts over.
	writeFile(t, path, "")
	appendFile(t, path, criLines(10, 1))
	lr.expect(t, "line 10")

	// The end of the call ends the stream.
	cancel()

	select {
	case err := <-lr.done:
		if err != nil {
			t.Fatalf("reader ended with %v, want EOF", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader did not end with its context")
	}
}
