package cri

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/images"
)

// Render writes what the CRI instance reads from the machine config:
// 00-base.part, 01-registries.part and the registry hosts tree, then merges
// every *.part (20-customization.part included) into cri.toml. The hosts
// tree is read at each pull, so a mirror change takes effect live.
func (c *Containerd) Render(cfg *configs.Config) error {
	c.mu.Lock()
	defer c.mu.Unlock()

	rt := c.opts.Runtime

	var regs *configs.RegistriesConfig
	if cfg != nil && cfg.Machine != nil {
		regs = cfg.Machine.Registries
	}

	hosts, err := RegistryHosts(regs, rt.HostsDir)
	if err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	if _, err := SyncTree(rt.HostsDir, hosts); err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	regPart, err := RegistriesPart(regs, rt.HostsDir)
	if err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	base := BasePart(BaseOptions{
		RestrictOOMScoreAdj: !c.CanLowerOOMScoreAdj(),
		CNIBinDirs:          rt.CNIBinDirs(),
		CNIConfDir:          rt.CNIConfDir,
		SandboxImage:        images.PauseImage().String(),
		NoPivotRoot:         rt.NoPivotRoot,
	})

	for name, data := range map[string][]byte{"00-base.part": base, "01-registries.part": regPart} {
		if err := writeIfChanged(filepath.Join(rt.CRIConfDir, name), data, 0o600); err != nil {
			return fmt.Errorf("cri config: %w", err)
		}
	}

	// MergeParts' errors and writeIfChanged's (os and atomicfile errors)
	// already name the part or the path.
	merged, _, err := MergeParts(rt.CRIConfDir)
	if err != nil {
		return err
	}

	return writeIfChanged(filepath.Join(rt.CRIConfDir, "cri.toml"), merged, 0o600)
}

// CanLowerOOMScoreAdj says whether this node may lower a process's
// oom_score_adj, which runc does for every pod sandbox (-998). Some
// sandboxes (Docker nodes without CAP_SYS_RESOURCE, this project's CI
// machine even for root) forbid it; the CRI then runs with
// restrict_oom_score_adj instead of failing every pod. It is tried on
// machined itself and undone.
func (c *Containerd) CanLowerOOMScoreAdj() bool {
	if c.opts.OOMScoreAdjPath == "-" {
		return false
	}

	p := c.opts.OOMScoreAdjPath
	if p == "" {
		p = "/proc/self/oom_score_adj"
	}

	data, err := os.ReadFile(p)
	if err != nil {
		return false
	}

	cur, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || cur <= -1000 {
		return cur <= -1000 && err == nil
	}

	if err := os.WriteFile(p, []byte(strconv.Itoa(cur-1)), 0o644); err != nil {
		return false
	}

	// Raising it back is always allowed.
	_ = os.WriteFile(p, []byte(strconv.Itoa(cur)), 0o644)

	return true
}

// replaceSymlink swaps the link in with a rename, so containerd never
// finds it missing while it is replaced. Its errors are os.LinkError's,
// which name both paths.
func replaceSymlink(target, link string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}

	tmp := link + ".tmp"
	_ = os.Remove(tmp)

	if err := os.Symlink(target, tmp); err != nil {
		return err
	}

	return os.Rename(tmp, link)
}

// writeIfChanged writes data atomically unless the file already holds it,
// so that an unchanged render touches nothing. Its errors are os's and
// atomicfile's, which name the path.
func writeIfChanged(path string, data []byte, mode os.FileMode) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}

	return atomicfile.Write(path, data, mode)
}
