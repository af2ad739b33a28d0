package machine

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
)

// Files on STATE, named as on Talos.
const (
	ConfigFile   = "config.yaml"
	IdentityFile = "node-identity.yaml"
)

// State is the STATE directory.
type State struct {
	Dir string
}

// ConfigPath is where the persisted config lives.
func (s State) ConfigPath() string { return filepath.Join(s.Dir, ConfigFile) }

// LoadConfig returns the persisted config, or nil when there is none.
func (s State) LoadConfig() ([]byte, error) {
	data, err := os.ReadFile(s.ConfigPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("read persisted config: %w", err)
	}

	return data, nil
}

// SaveConfig persists the config atomically: a reader (or a crash at any
// point) sees the old file or the new one, never a mix.
func (s State) SaveConfig(data []byte) error {
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("persist config: %w", err)
	}

	if err := atomicfile.Write(s.ConfigPath(), data, 0o600); err != nil {
		return fmt.Errorf("persist config: %w", err)
	}

	return nil
}

// identity is the on-disk form of the node identity.
type identity struct {
	NodeID string `yaml:"nodeId"`
}

// Identity returns the node's identity: 32 random bytes made once and kept
// on STATE, so a node is the same node across reboots.
func (s State) Identity() (string, error) {
	path := filepath.Join(s.Dir, IdentityFile)

	data, err := os.ReadFile(path)
	if err == nil {
		var id identity
		if err := yaml.Unmarshal(data, &id); err != nil || len(id.NodeID) < 32 {
			return "", fmt.Errorf("%s is corrupt: %v", path, err)
		}

		return id.NodeID, nil
	}

	if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("read node identity: %w", err)
	}

	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("node identity: %w", err)
	}

	id := strings.TrimRight(base64.RawURLEncoding.EncodeToString(raw), "=")

	out, err := yaml.Marshal(identity{NodeID: id})
	if err != nil {
		return "", err
	}

	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", fmt.Errorf("node identity: %w", err)
	}

	if err := atomicfile.Write(path, out, 0o600); err != nil {
		return "", fmt.Errorf("node identity: %w", err)
	}

	return id, nil
}

// RemoveStaleTemps deletes temporary files left by writes that a crash or
// power loss interrupted; the rename never happened, so they hold nothing
// that was ever in effect.
func (s State) RemoveStaleTemps() error {
	matches, err := filepath.Glob(filepath.Join(s.Dir, atomicfile.TempPattern("*")))
	if err != nil {
		return err
	}

	for _, m := range matches {
		if err := os.Remove(m); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", m, err)
		}
	}

	return nil
}

// Hostname is the node's name as its services present it: the config's
// machine.network.hostname, else the kernel's, else "localhost".
func Hostname(cfg *configs.Config) string {
	if cfg != nil && cfg.Machine != nil && cfg.Machine.Network != nil && cfg.Machine.Network.Hostname != "" {
		return cfg.Machine.Network.Hostname
	}

	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}

	return h
}

// HostnameOr is override when set (several test nodes share one kernel
// and need names of their own), else Hostname(cfg).
func HostnameOr(override string, cfg *configs.Config) string {
	if override != "" {
		return override
	}

	return Hostname(cfg)
}
