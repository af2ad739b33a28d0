package etcd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestStartRefusesWrongDataDir(t *testing.T) {
	t.Parallel()

	o := testOptions(t, newTestCA(t), "cp-1")

	if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}

	_, err := Start(t.Context(), o, Resume)
	if !errors.Is(err, ErrNoMember) {
		t.Fatalf("resume of an empty data dir: %v, want ErrNoMember", err)
	}

	if err := os.WriteFile(filepath.Join(o.DataDir, "leftover"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, mode := range []Mode{Bootstrap, Join} {
		_, err := Start(t.Context(), o, mode)
		if !errors.Is(err, ErrDataDirNotEmpty) {
			t.Fatalf("%s into a non-empty data dir: %v, want ErrDataDirNotEmpty", mode, err)
		}

		t.Logf("%s: %v", mode, err)
	}

	if _, err := os.Stat(filepath.Join(o.DataDir, "leftover")); err != nil {
		t.Fatalf("the refused start touched the data dir: %v", err)
	}
}

// TestJoinWaitsForCluster: with nobody to join, Join keeps trying, nags at
// most once per WaitingInterval, and gives up cleanly when ctx ends.
func TestJoinWaitsForCluster(t *testing.T) {
	t.Parallel()

	o := testOptions(t, newTestCA(t), "cp-2")
	nobody := URLs([]netip.Addr{loopback}, freePorts(t, 1)[0])

	o.JoinEndpoints = func() []string { return nobody }
	o.RetryInterval = 20 * time.Millisecond
	o.WaitingInterval = 300 * time.Millisecond

	var (
		mu    sync.Mutex
		calls []time.Time
		seen  [][]string
	)

	twice := make(chan struct{})

	o.Waiting = func(endpoints []string) {
		mu.Lock()
		defer mu.Unlock()

		calls = append(calls, time.Now())
		seen = append(seen, endpoints)

		if len(calls) == 2 {
			close(twice)
		}
	}

	ctx, cancel := context.WithCancel(t.Context())

	errc := make(chan error, 1)

	go func() {
		_, err := Start(ctx, o, Join)
		errc <- err
	}()

	select {
	case <-twice:
	case <-time.After(30 * time.Second):
		t.Fatal("Waiting was not called twice")
	}

	cancel()

	err := <-errc
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start returned %v, want context.Canceled", err)
	}

	mu.Lock()
	defer mu.Unlock()

	if gap := calls[1].Sub(calls[0]); gap < o.WaitingInterval {
		t.Fatalf("Waiting called twice within %v", gap)
	}

	if !slices.Equal(seen[0], nobody) {
		t.Fatalf("Waiting got %v, want %v", seen[0], nobody)
	}

	if empty, err := dirEmpty(o.DataDir); err != nil || !empty {
		t.Fatalf("a join that never happened left data behind: %v", err)
	}
}

// TestSnapshotRestore: a snapshot restored on a fresh data dir under another
// name serves the keys again; corrupt or truncated snapshots, and raw
// database copies without skipHashCheck, are refused.
func TestSnapshotRestore(t *testing.T) {
	t.Parallel()

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	ca := newTestCA(t)
	dir := t.TempDir()

	src, so := startMember(t, ctx, testOptions(t, ca, "cp-1"), Bootstrap)

	const keys = 100

	for i := range keys {
		if _, err := src.Client().Put(ctx, fmt.Sprintf("/registry/k%03d", i), fmt.Sprintf("v%d", i)); err != nil {
			t.Fatal(err)
		}
	}

	if err := src.Defrag(ctx); err != nil {
		t.Fatal(err)
	}

	if alarms, err := src.AlarmList(ctx); err != nil || len(alarms) != 0 {
		t.Fatalf("alarms %v: %v", alarms, err)
	}

	if _, err := src.AlarmDisarm(ctx); err != nil {
		t.Fatal(err)
	}

	snap := filepath.Join(dir, "db.snapshot")
	writeSnapshot(t, ctx, src, snap)

	src.Close()

	raw := filepath.Join(dir, "raw.db")
	copyFile(t, filepath.Join(so.DataDir, "member", "snap", "db"), raw, 0)

	t.Run("restore serves the keys under the new name", func(t *testing.T) {
		o := testOptions(t, ca, "cp-restored")

		if err := Restore(snap, o, false); err != nil {
			t.Fatal(err)
		}

		s, o := startMember(t, ctx, o, Resume)
		assertKeys(t, ctx, s, keys)

		ms, err := s.Members(ctx)
		if err != nil {
			t.Fatal(err)
		}

		if len(ms) != 1 || ms[0].Name != "cp-restored" || !slices.Equal(ms[0].PeerURLs, o.AdvertisePeerURLs) {
			t.Fatalf("members after restore: %s", memberNames(ms))
		}

		if err := Restore(snap, o, false); !errors.Is(err, ErrDataDirNotEmpty) {
			t.Fatalf("restore over a member: %v, want ErrDataDirNotEmpty", err)
		}
	})

	for _, tc := range []struct {
		name   string
		mangle func(path string)
	}{
		{"truncated", func(p string) { copyFile(t, snap, p, -1) }},
		{"corrupt", func(p string) {
			copyFile(t, snap, p, 0)
			flipByte(t, p, 8192)
		}},
		{"raw database copy", func(p string) { copyFile(t, raw, p, 0) }},
	} {
		t.Run("hash check refuses a "+tc.name+" snapshot", func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "bad.snapshot")
			tc.mangle(p)

			o := testOptions(t, ca, "cp-bad")

			err := Restore(p, o, false)
			if !errors.Is(err, ErrSnapshotIntegrity) {
				t.Fatalf("got %v, want ErrSnapshotIntegrity", err)
			}

			t.Logf("%v", err)

			if empty, err := dirEmpty(o.DataDir); err != nil || !empty {
				t.Fatalf("refused restore left data behind: %v", err)
			}
		})
	}

	t.Run("a raw database copy restores with the hash check skipped", func(t *testing.T) {
		o := testOptions(t, ca, "cp-raw")

		if err := Restore(raw, o, true); err != nil {
			t.Fatal(err)
		}

		s, _ := startMember(t, ctx, o, Resume)
		assertKeys(t, ctx, s, keys)
	})
}

func writeSnapshot(t *testing.T, ctx context.Context, s *Server, path string) {
	t.Helper()

	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}

	if err := s.Snapshot(ctx, f); err != nil {
		t.Fatal(err)
	}

	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyFile copies src to dst, dropping -trim bytes from the end.
func copyFile(t *testing.T, src, dst string, trim int64) {
	t.Helper()

	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}

	defer in.Close() //nolint:errcheck

	st, err := in.Stat()
	if err != nil {
		t.Fatal(err)
	}

	out, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}

	if _, err := io.CopyN(out, in, st.Size()+trim); err != nil {
		t.Fatal(err)
	}

	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()

	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}

	defer f.Close() //nolint:errcheck

	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}

	b[0] ^= 0xff

	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func assertKeys(t *testing.T, ctx context.Context, s *Server, want int) {
	t.Helper()

	resp, err := s.Client().Get(ctx, "/registry/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}

	if len(resp.Kvs) != want || string(resp.Kvs[7].Value) != "v7" {
		t.Fatalf("got %d keys, want %d", len(resp.Kvs), want)
	}
}
