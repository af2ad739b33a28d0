package etcd

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
)

// ErrSnapshotIntegrity: the snapshot's trailing SHA-256 is missing or does
// not match its data.
var ErrSnapshotIntegrity = errors.New("etcd snapshot failed its integrity check")

// Restore makes opts.DataDir (which must be empty) hold a one-member cluster
// from a snapshot: this node's name and advertised peer URLs, the snapshot's
// keys. Start with Resume then serves it, and other nodes Join it.
//
// A snapshot from Server.Snapshot (or etcdctl snapshot save) ends with a
// SHA-256 of its data, which is checked. A database file copied out of a
// data dir (member/snap/db) has none and needs skipHashCheck.
func Restore(snapshotPath string, opts Options, skipHashCheck bool) error {
	if err := restore(snapshotPath, opts, skipHashCheck); err != nil {
		return fmt.Errorf("etcd restore: %w", err)
	}

	return nil
}

func restore(snapshotPath string, opts Options, skipHashCheck bool) error {
	r, err := opts.resolve()
	if err != nil {
		return err
	}

	empty, err := dirEmpty(r.DataDir)
	if err != nil {
		return err
	}

	if !empty {
		return fmt.Errorf("%w: %s", ErrDataDirNotEmpty, r.DataDir)
	}

	// Checked here too, though etcdutl checks again, to fail with a
	// sentinel and a message that says what to do.
	if !skipHashCheck {
		if err := verifySnapshot(snapshotPath); err != nil {
			return err
		}
	}

	lg, err := newLogger(r.Log, "info", "json")
	if err != nil {
		return err
	}

	if err := os.MkdirAll(r.DataDir, 0o700); err != nil {
		return err
	}

	err = snapshot.NewV3(lg).Restore(snapshot.RestoreConfig{
		SnapshotPath:   snapshotPath,
		Name:           r.Name,
		OutputDataDir:  r.DataDir,
		PeerURLs:       r.AdvertisePeerURLs,
		InitialCluster: r.initialCluster(),
		// Start leaves the token at etcd's default; they must agree.
		InitialClusterToken: embed.NewConfig().InitialClusterToken,
		SkipHashCheck:       skipHashCheck,
	})
	if err != nil {
		// Leave the dir empty again so the restore can be retried.
		return errors.Join(err, wipeDir(r.DataDir))
	}

	return nil
}

// verifySnapshot checks the SHA-256 etcd appends to a snapshot. etcd tells
// a snapshot from a bare database by size: bbolt files are whole pages, so
// only a snapshot is 32 bytes past a multiple of 512.
func verifySnapshot(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}

	defer f.Close() //nolint:errcheck // read only

	st, err := f.Stat()
	if err != nil {
		return err
	}

	size := st.Size()
	if size%512 != sha256.Size {
		return fmt.Errorf("%w: %s has no SHA-256 trailer: it is truncated, or a raw database copy (restore that with the hash check skipped)",
			ErrSnapshotIntegrity, path)
	}

	h := sha256.New()
	if _, err := io.CopyN(h, f, size-sha256.Size); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}

	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}

	if !bytes.Equal(h.Sum(nil), want) {
		return fmt.Errorf("%w: %s: SHA-256 mismatch, the snapshot is corrupt", ErrSnapshotIntegrity, path)
	}

	return nil
}
