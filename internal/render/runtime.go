package render

import (
	"path"
	"strings"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/cri"
	"github.com/talosbox/talosbox/internal/cri/validation"
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

	b.userHosts(hosts)

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

	// The user's part comes through machine.files, which the node's CRI
	// renders with the others (cri.OwnsMachineFile).
	where := "machine.registries"
	if data, i, ok := cri.Landed(b.cfg.Machine.Files, cri.CustomizationPartPath); ok {
		parts = append(parts, cri.Part{Name: cri.CustomizationPartName, Data: data})
		where = sprintf("machine.files[%d].content", i)
	}

	// Merged and loaded as the node's CRI containerd will load it: a
	// setting containerd refuses is refused here, naming the part and
	// the key.
	merged, err := cri.MergeChecked(parts, layout.CRIConfDir)
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

// userHosts renders the registry hosts files machine.files places under
// cri.UserHostsDir where the node's containerd reads them (HostsDir),
// each checked by containerd's own hosts.toml parser. generated is what
// machine.registries puts in the same tree.
func (b *builder) userHosts(generated []cri.File) {
	user := cri.UserHostsFiles(b.cfg.Machine.Files)
	if len(user) == 0 {
		return
	}

	taken := map[string]bool{}
	for _, f := range generated {
		taken[f.Path] = true
	}

	checked := make([]validation.HostsFile, 0, len(user))

	for _, f := range user {
		fp := sprintf("machine.files[%d]", f.Index)
		name := path.Join(cri.UserHostsDir, f.Path)

		if taken[f.Path] {
			b.fail(fp+".path", "%s: machine.registries makes this file too (%s): configure the registry in one place", name, path.Join(layout.HostsDir, f.Path))

			continue
		}

		checked = append(checked, validation.HostsFile{Path: f.Path, Name: name, Data: f.Data})

		p := path.Join(layout.HostsDir, f.Path)
		b.add(Artifact{Path: "fs" + p, NodePath: p, Mode: f.Mode, Data: f.Data})
	}

	if err := validation.Hosts(checked, cri.UserHostsDir); err != nil {
		at := "machine.files"

		for _, f := range user {
			if strings.HasPrefix(err.Error(), path.Join(cri.UserHostsDir, f.Path)+":") {
				at = sprintf("machine.files[%d].content", f.Index)
			}
		}

		b.errs = append(b.errs, &configs.ValidationError{Path: at, Msg: err.Error()})
	}
}
