package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/resources/runtime"
)

// What STATE keeps so that a config that breaks the boot never kills the
// node: the last config that booted to running, the config that failed
// (moved aside, not deleted, so that it can be inspected) and a record of
// why. All of it survives a reboot, which on metal is how the node boots
// the last good config again, and all of it holds secrets: 0600, written
// atomically like config.yaml.

// Files on STATE beside config.yaml.
const (
	// LastGoodConfigFile is the last config a boot brought to running.
	LastGoodConfigFile = "config.yaml.last-good"
	// FailedConfigFile is the last config the node refused to boot.
	FailedConfigFile = "config.yaml.failed"
	// FallbackRecordFile says why, and lists every config that failed.
	FallbackRecordFile = "config-fallback.yaml"
)

// maxFailedHashes bounds the list of failed configs a record keeps.
const maxFailedHashes = 16

// fallbackRecord is config-fallback.yaml.
type fallbackRecord struct {
	// Last is the most recent config the node refused to boot.
	Last runtime.ConfigLoadErrorSpec `yaml:"last"`
	// LastSHA256 is that config's hash: it is forgotten once the same
	// config boots to running (applied again after a fix).
	LastSHA256 string `yaml:"lastSHA256"`
	// Failed are the hashes of the configs that failed to boot and have
	// not booted to running since. A config a seed source hands over
	// (--config, talos.config=, $USERDATA) is skipped when listed here:
	// that is what keeps a node whose seed breaks the boot from trying it
	// at every boot.
	Failed []string `yaml:"failed"`
}

// configHash names a config in the record.
func configHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func (s State) path(name string) string { return filepath.Join(s.Dir, name) }

// readOptional reads a STATE file; nil without error when it is absent.
func (s State) readOptional(name string) ([]byte, error) {
	data, err := os.ReadFile(s.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}

	return data, nil
}

func (s State) writeSecret(name string, data []byte) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}

	if err := atomicfile.Write(s.path(name), data, 0o600); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}

	return nil
}

// LoadLastGood returns the last config that booted to running, or nil.
func (s State) LoadLastGood() ([]byte, error) { return s.readOptional(LastGoodConfigFile) }

// SaveLastGood records data as the last good config, unless it already is.
func (s State) SaveLastGood(data []byte) (bool, error) {
	cur, err := s.LoadLastGood()
	if err != nil || slices.Equal(cur, data) {
		return false, err
	}

	return true, s.writeSecret(LastGoodConfigFile, data)
}

// LoadFailedConfig returns the config kept aside as failed, or nil.
func (s State) LoadFailedConfig() ([]byte, error) { return s.readOptional(FailedConfigFile) }

// loadRecord returns config-fallback.yaml, nil when there is none.
func (s State) loadRecord() (*fallbackRecord, error) {
	data, err := s.readOptional(FallbackRecordFile)
	if err != nil || data == nil {
		return nil, err
	}

	var rec fallbackRecord
	if err := yaml.Unmarshal(data, &rec); err != nil {
		return nil, fmt.Errorf("%s is corrupt: %w", s.path(FallbackRecordFile), err)
	}

	return &rec, nil
}

func (s State) saveRecord(rec *fallbackRecord) error {
	data, err := yaml.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode %s: %w", FallbackRecordFile, err)
	}

	return s.writeSecret(FallbackRecordFile, data)
}

// keepFailed moves a failed config aside: config.yaml.failed holds kept
// (the config, or its redacted form), and the record says why and lists
// the config's hash (of the config as it was, not of what was kept).
// Files first, record last: a crash in between leaves config.yaml as it
// was, and the next boot fails and comes here again.
func (s State) keepFailed(data, kept []byte, why runtime.ConfigLoadErrorSpec) error {
	rec, err := s.loadRecord()
	if err != nil {
		// A record that cannot be read is replaced: the failure at hand
		// is what the operator needs to see.
		rec = nil
	}

	if rec == nil {
		rec = &fallbackRecord{}
	}

	if err := s.writeSecret(FailedConfigFile, kept); err != nil {
		return err
	}

	h := configHash(data)
	rec.Last, rec.LastSHA256 = why, h

	if !slices.Contains(rec.Failed, h) {
		rec.Failed = append(rec.Failed, h)
	}

	if len(rec.Failed) > maxFailedHashes {
		rec.Failed = rec.Failed[len(rec.Failed)-maxFailedHashes:]
	}

	return s.saveRecord(rec)
}

// failedBefore says whether data is a config that failed to boot and has
// not booted to running since.
func (s State) failedBefore(data []byte) (bool, error) {
	rec, err := s.loadRecord()
	if err != nil || rec == nil {
		return false, err
	}

	return slices.Contains(rec.Failed, configHash(data)), nil
}

// forgetFailure is called once data booted to running: it is no longer a
// failed config; when it is the one kept aside, the record and the kept
// copy go too (the operator fixed what broke it and applied it again).
// It reports whether the kept failure was removed.
func (s State) forgetFailure(data []byte) (bool, error) {
	rec, err := s.loadRecord()
	if err != nil || rec == nil {
		return false, err
	}

	h := configHash(data)
	last := rec.LastSHA256 == h

	if !last && !slices.Contains(rec.Failed, h) {
		return false, nil
	}

	rec.Failed = slices.DeleteFunc(rec.Failed, func(x string) bool { return x == h })

	if last {
		if err := removeSynced(s.path(FailedConfigFile)); err != nil {
			return false, err
		}

		rec.Last, rec.LastSHA256 = runtime.ConfigLoadErrorSpec{}, ""
	}

	if rec.LastSHA256 == "" && len(rec.Failed) == 0 {
		return last, removeSynced(s.path(FallbackRecordFile))
	}

	return last, s.saveRecord(rec)
}

// RemoveConfig deletes config.yaml when it holds data (and only then: a
// config persisted meanwhile by another apply stays).
func (s State) RemoveConfig(data []byte) error {
	cur, err := s.LoadConfig()
	if err != nil || cur == nil || !slices.Equal(cur, data) {
		return err
	}

	return removeSynced(s.ConfigPath())
}

// removeSynced removes a file and syncs its directory, so that the
// removal survives a power loss like a rename does; a missing file is
// fine.
func removeSynced(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", path, err)
	}

	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Dir(path), err)
	}
	defer d.Close()

	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", filepath.Dir(path), err)
	}

	return nil
}
