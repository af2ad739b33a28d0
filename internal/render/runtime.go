package render

import (
	"path"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/render/layout"
)

// runtime renders the two containerd instances' configs, the CRI parts and
// their merge, and the registry hosts tree, as machined writes them.
func (b *builder) runtime() {
	b.add(Artifact{Path: "fs" + layout.SystemConfig, NodePath: layout.SystemConfig, Mode: 0o600,
		Data: cri.SystemConfig(cri.InstanceOptions{Root: layout.SystemRoot, State: layout.SystemState, Socket: layout.SystemSocket})})
	b.add(Artifact{Path: "fs" + layout.CRIConfig, NodePath: layout.CRIConfig, Mode: 0o600,
		Data: cri.CRIConfig(cri.InstanceOptions{Root: layout.CRIRoot, State: layout.CRIState, Socket: layout.CRISocket, Imports: []string{path.Join(layout.CRIConfDir, "cri.toml")}})})

	regs := b.cfg.Machine.Registries

	hosts, err := cri.RegistryHosts(regs, layout.HostsDir)
	if err != nil {
		b.failErr("machine.registries", err)
	}

	for _, f := range hosts {
		p := path.Join(layout.HostsDir, f.Path)
		b.add(Artifact{Path: "fs" + p, NodePath: p, Mode: f.Mode, Data: f.Data})
	}

	regPart, err := cri.RegistriesPart(regs, layout.HostsDir)
	if err != nil {
		b.failErr("machine.registries", err)

		return
	}

	if b.opts.Mode == configs.ModeContainer {
		b.note("containerd: a Docker node that may not lower oom_score_adj runs the CRI with restrict_oom_score_adj (detected at run time; rendered without)")
	}

	parts := []cri.Part{
		{Name: cri.BasePartName, Data: cri.BasePart(cri.BaseOptions{
			CNIBinDirs:   []string{layout.CNIBinDir}, // the writable one is the shipped one there
			CNIConfDir:   layout.CNIConfDir,
			SandboxImage: images.PauseImage().String(),
			NoPivotRoot:  b.opts.Mode != configs.ModeContainer,
		})},
		{Name: cri.RegistriesPartName, Data: regPart},
	}

	// The user's part comes through machine.files, which the node's boot
	// writes before containerd starts.
	where := "machine.registries"
	if data, i, ok := landed(b.cfg.Machine.Files, path.Join(layout.CRIConfDir, cri.CustomizationPartName)); ok {
		parts = append(parts, cri.Part{Name: cri.CustomizationPartName, Data: data})
		where = sprintf("machine.files[%d].content", i)
	}

	merged, _, err := cri.MergePartData(parts)
	if err != nil {
		b.failErr(where, err)

		return
	}

	for _, p := range parts {
		// The customization part is a machine.files artifact already.
		if p.Name != cri.CustomizationPartName {
			np := path.Join(layout.CRIConfDir, p.Name)
			b.add(Artifact{Path: "fs" + np, NodePath: np, Mode: 0o600, Data: p.Data})
		}
	}

	np := path.Join(layout.CRIConfDir, "cri.toml")
	b.add(Artifact{Path: "fs" + np, NodePath: np, Mode: 0o600, Data: merged})
}

// landed is the content machine.files leave at p, starting from no file:
// the index of the last entry that wrote it, false when none does.
func landed(files []configs.MachineFile, p string) (data []byte, last int, ok bool) {
	for i, f := range files {
		if path.Clean(f.Path) != p {
			continue
		}

		switch f.Op {
		case "append":
			data = append(data, f.Content...)
		default:
			data = []byte(f.Content)
		}

		last, ok = i, true
	}

	return slices.Clip(data), last, ok
}
