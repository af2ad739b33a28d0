package cri

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/cri/validation"
	"github.com/talosbox/talosbox/internal/images"
)

// Render writes what the CRI instance reads from the machine config:
// 00-base.part, 01-registries.part, the user's 20-customization.part
// (machine.files; removed when the config has none) and the registry
// hosts tree (machine.registries' and the hosts files machine.files
// gives), then the merge of every *.part into cri.toml. The merge is
// checked as containerd will load it (validation.CRIConfig) before
// anything is written: a config containerd would refuse fails here,
// naming the part and the key, and the files stay as the last render
// left them. The hosts tree is read at each pull, so a mirror change takes
// effect live.
func (c *Containerd) Render(cfg *configs.Config) error {
	c.mu.Lock()
	defer c.mu.Unlock()

	rt := c.opts.Runtime

	var (
		regs  *configs.RegistriesConfig
		files []configs.MachineFile
	)

	if cfg != nil && cfg.Machine != nil {
		regs, files = cfg.Machine.Registries, cfg.Machine.Files
	}

	hosts, err := RegistryHosts(regs, rt.HostsDir)
	if err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	for _, f := range UserHostsFiles(files) {
		hosts = append(hosts, f.File)
	}

	regPart, err := RegistriesPart(regs, rt.HostsDir)
	if err != nil {
		return fmt.Errorf("registry mirrors: %w", err)
	}

	ours := []Part{
		{Name: BasePartName, Data: BasePart(BaseOptions{
			RestrictOOMScoreAdj: !c.CanLowerOOMScoreAdj(),
			CNIBinDirs:          rt.CNIBinDirs(),
			CNIConfDir:          rt.CNIConfDir,
			SandboxImage:        images.PauseImage().String(),
			NoPivotRoot:         rt.NoPivotRoot,
		})},
		{Name: RegistriesPartName, Data: regPart},
	}

	custom, _, hasCustom := Landed(files, CustomizationPartPath)
	if hasCustom {
		ours = append(ours, Part{Name: CustomizationPartName, Data: custom})
	}

	// Parts the node's image ships (an extension's) merge in too.
	others, err := otherParts(rt.CRIConfDir)
	if err != nil {
		return err
	}

	all := append(slices.Clone(ours), others...)
	slices.SortStableFunc(all, func(a, b Part) int { return strings.Compare(a.Name, b.Name) })

	merged, err := MergeChecked(all, rt.CRIConfDir)
	if err != nil {
		return err
	}

	if _, err := SyncTree(rt.HostsDir, hosts); err != nil {
		return fmt.Errorf("registry hosts: %w", err)
	}

	for _, p := range ours {
		if err := writeIfChanged(filepath.Join(rt.CRIConfDir, p.Name), p.Data, 0o600); err != nil {
			return fmt.Errorf("cri config: %w", err)
		}
	}

	if !hasCustom {
		// Written by an earlier config, or by machine.files before the
		// CRI rendered it: it is not this config's.
		if err := os.Remove(filepath.Join(rt.CRIConfDir, CustomizationPartName)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("cri config: %w", err)
		}
	}

	return writeIfChanged(filepath.Join(rt.CRIConfDir, "cri.toml"), merged, 0o600)
}

// otherParts reads the *.part files of dir that Render does not write.
func otherParts(dir string) ([]Part, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.part"))
	if err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}

	var out []Part

	for _, p := range paths {
		name := filepath.Base(p)
		if name == BasePartName || name == RegistriesPartName || name == CustomizationPartName {
			continue
		}

		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			continue
		}

		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("cri: %w", err)
		}

		out = append(out, Part{Name: name, Data: data})
	}

	return out, nil
}

// MergeChecked merges parts in the order given (MergePartData) and checks
// the result as the CRI containerd would load it (validation.CRIConfig),
// naming each part as the file dir/<name>.
func MergeChecked(parts []Part, dir string) ([]byte, error) {
	merged, _, err := MergePartData(parts)
	if err != nil {
		return nil, err
	}

	named := make([]validation.Part, len(parts))
	for i, p := range parts {
		named[i] = validation.Part{Name: path.Join(dir, p.Name), Data: p.Data}
	}

	if err := validation.CRIConfig(merged, named, CRIDisabledPlugins()); err != nil {
		return nil, fmt.Errorf("cri: %w", err)
	}

	return merged, nil
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
