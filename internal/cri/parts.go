package cri

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/constants"
)

// Part names, in the order they are merged. 20-customization.part is
// written by the user through machine.files.
const (
	BasePartName          = "00-base.part"
	RegistriesPartName    = "01-registries.part"
	CustomizationPartName = "20-customization.part"
)

// SnapshotterOverlay is the snapshotter the CRI unpacks images into when
// BaseOptions names none: overlayfs, as on Talos.
const SnapshotterOverlay = "overlayfs"

// Plugin IDs (type.ID) of the CRI plugins and NRI in containerd 2.x.
const (
	pluginCRIImages  = "io.containerd.cri.v1.images"
	pluginCRIRuntime = "io.containerd.cri.v1.runtime"
	pluginCRIGRPC    = "io.containerd.grpc.v1.cri"
	pluginNRI        = "io.containerd.nri.v1.nri"
)

// BaseOptions are the node-specific settings of 00-base.part.
type BaseOptions struct {
	// RestrictOOMScoreAdj caps container oom_score_adj at containerd's own,
	// which containerd needs when it runs without CAP_SYS_RESOURCE (in a
	// container).
	RestrictOOMScoreAdj bool
	// CNIBinDirs and CNIConfDir are where the CNI plugins and the network
	// config are; empty leaves containerd's defaults. A node has two bin
	// directories: the plugins it ships, and a writable one that CNI
	// installers (flannel's) copy theirs into.
	CNIBinDirs []string
	CNIConfDir string
	// SandboxImage is the pause image; empty leaves containerd's default.
	SandboxImage string
	// Snapshotter defaults to SnapshotterOverlay.
	Snapshotter string
	// NoPivotRoot makes runc enter a container's root with MS_MOVE and
	// chroot: pivot_root(2) refuses to leave the initramfs, which is what
	// a metal node runs from.
	NoPivotRoot bool
}

// BasePart renders 00-base.part, the CRI settings every node gets.
func BasePart(o BaseOptions) []byte {
	images := map[string]any{
		// Without it the compressed layers stay in the content store next
		// to their unpacked snapshots, doubling the disk an image takes.
		"discard_unpacked_layers": true,
		// discard_unpacked_layers is only honoured by the local pull path;
		// the transfer service pull (the default) ignores it. Talos sets
		// this for the same reason.
		"use_local_image_pull": true,
		"snapshotter":          cmp.Or(o.Snapshotter, SnapshotterOverlay),
	}

	if o.SandboxImage != "" {
		// containerd 2 replaced sandbox_image with the pinned image
		// "sandbox", which the image GC also leaves alone.
		images["pinned_images"] = map[string]any{"sandbox": o.SandboxImage}
	}

	runtime := map[string]any{}

	if o.RestrictOOMScoreAdj {
		runtime["restrict_oom_score_adj"] = true
	}

	cni := map[string]any{}

	if len(o.CNIBinDirs) > 0 {
		cni["bin_dirs"] = o.CNIBinDirs
	}

	if o.CNIConfDir != "" {
		cni["conf_dir"] = o.CNIConfDir
	}

	if len(cni) > 0 {
		runtime["cni"] = cni
	}

	// The pods that name one shim group share one shim process
	// (constants.ShimGroupAnnotation): the shim reads the group from
	// the spec, where the CRI copies only the pod annotations listed here.
	runc := map[string]any{"pod_annotations": []string{constants.ShimGroupAnnotation}}

	if o.NoPivotRoot {
		runc["options"] = map[string]any{"NoPivotRoot": true}
	}

	runtime["containerd"] = map[string]any{"runtimes": map[string]any{"runc": runc}}

	plugins := map[string]any{
		pluginCRIImages: images,
		// NRI lets any process that can reach its socket modify
		// containers; nothing on the node uses it.
		pluginNRI: map[string]any{"disable": true},
	}

	if len(runtime) > 0 {
		plugins[pluginCRIRuntime] = runtime
	}

	var buf bytes.Buffer

	// An imported file without a version is taken as version 1 and
	// migrated, which would rename these plugin tables; later parts
	// inherit this version through the merge.
	if err := encode(&buf, map[string]any{"version": configVersion, "plugins": plugins}); err != nil {
		// Only maps of strings, bools and string lists: cannot fail.
		panic(err)
	}

	return buf.Bytes()
}

type authConfig struct {
	Username      string `toml:"username"`
	Password      string `toml:"password"`
	Auth          string `toml:"auth"`
	IdentityToken string `toml:"identitytoken"`
}

type registryConfig struct {
	Auth *authConfig `toml:"auth"`
}

type registriesPart struct {
	Plugins struct {
		Images struct {
			Registry struct {
				ConfigPath string                    `toml:"config_path"`
				Configs    map[string]registryConfig `toml:"configs"`
			} `toml:"registry"`
		} `toml:"io.containerd.cri.v1.images"`
	} `toml:"plugins"`
}

// RegistriesPart renders 01-registries.part: the hosts tree to read
// mirrors and TLS from, and the registry credentials, which containerd
// still takes only from its own config.
func RegistriesPart(r *configs.RegistriesConfig, hostsDir string) ([]byte, error) {
	var part registriesPart

	reg := &part.Plugins.Images.Registry
	reg.ConfigPath = hostsDir
	reg.Configs = map[string]registryConfig{}

	if r != nil {
		for _, host := range slices.Sorted(maps.Keys(r.Config)) {
			a := r.Config[host].Auth
			if a == nil {
				continue
			}

			// The CRI looks credentials up by the host it connects to,
			// and for docker.io that is registry-1.docker.io.
			reg.Configs[defaultHost(host)] = registryConfig{Auth: &authConfig{
				Username:      a.Username,
				Password:      a.Password,
				Auth:          a.Auth,
				IdentityToken: a.IdentityToken,
			}}
		}
	}

	var buf bytes.Buffer

	if err := encode(&buf, &part); err != nil {
		return nil, fmt.Errorf("cri: %s: %w", RegistriesPartName, err)
	}

	return buf.Bytes(), nil
}

// ValidatePart checks that data is a TOML document, as MergeParts will
// need it to be. The error names the part and the line.
func ValidatePart(name string, data []byte) error {
	_, err := decodePart(name, data)

	return err
}

func decodePart(name string, data []byte) (map[string]any, error) {
	table := map[string]any{}

	if err := toml.Unmarshal(data, &table); err != nil {
		if derr, ok := errors.AsType[*toml.DecodeError](err); ok {
			row, _ := derr.Position()

			return nil, fmt.Errorf("cri: %s: line %d: %s", name, row, strings.TrimPrefix(derr.Error(), "toml: "))
		}

		return nil, fmt.Errorf("cri: %s: %w", name, err)
	}

	return table, nil
}

// MergeParts merges dir/*.part in name order into the CRI config that
// the CRI containerd imports, as Talos does: tables merge recursively,
// arrays are concatenated and any other value is replaced by the later
// part's. The result starts with a comment naming each part and its
// sha256, so a reader of the merged file can tell what went into it.
// sources lists the part names in merge order.
func MergeParts(dir string) (merged []byte, sources []string, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.part"))
	if err != nil {
		return nil, nil, fmt.Errorf("cri: %w", err)
	}

	slices.Sort(paths)

	parts := make([]Part, 0, len(paths))

	for _, p := range paths {
		// A directory named *.part is not a part (and Talos skips it too).
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			continue
		}

		data, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("cri: %w", err)
		}

		parts = append(parts, Part{Name: filepath.Base(p), Data: data})
	}

	return MergePartData(parts)
}

// Part is one CRI config part: its file name and content.
type Part struct {
	Name string
	Data []byte
}

// MergePartData is MergeParts on parts already read, merged in the order
// given (MergeParts gives them in name order); it touches no file, so a
// config's merged cri.toml can be rendered without a node.
func MergePartData(parts []Part) (merged []byte, sources []string, err error) {
	var header bytes.Buffer

	root := map[string]any{}

	for _, p := range parts {
		table, err := decodePart(p.Name, p.Data)
		if err != nil {
			return nil, nil, err
		}

		if err := mergeTable(root, table, ""); err != nil {
			return nil, nil, fmt.Errorf("cri: %s: %w", p.Name, err)
		}

		fmt.Fprintf(&header, "## %s (sha256:%x)\n", p.Name, sha256.Sum256(p.Data))

		sources = append(sources, p.Name)
	}

	var out bytes.Buffer

	if len(sources) > 0 {
		out.Write(header.Bytes())
		out.WriteByte('\n')
	}

	if err := encode(&out, root); err != nil {
		return nil, nil, fmt.Errorf("cri: encode merged config: %w", err)
	}

	return out.Bytes(), sources, nil
}

// mergeTable merges src into dst. A key that is a table on one side and
// not on the other is an error rather than a silent replacement: the
// later part would drop a whole section of the earlier ones.
func mergeTable(dst, src map[string]any, prefix string) error {
	for _, k := range slices.Sorted(maps.Keys(src)) {
		sv := src[k]
		key := prefix + quoteKey(k)

		dv, exists := dst[k]
		if !exists {
			dst[k] = sv

			continue
		}

		dt, dIsTable := dv.(map[string]any)
		st, sIsTable := sv.(map[string]any)

		switch {
		case dIsTable && sIsTable:
			if err := mergeTable(dt, st, key+"."); err != nil {
				return err
			}
		case dIsTable != sIsTable:
			return fmt.Errorf("key %s: cannot merge %s into %s", key, kind(sv), kind(dv))
		default:
			da, dIsArray := dv.([]any)
			sa, sIsArray := sv.([]any)

			if dIsArray && sIsArray {
				// Concatenate as Talos does, so a part can add a CDI or
				// CNI directory without repeating the base ones.
				dst[k] = append(slices.Clip(da), sa...)
			} else {
				dst[k] = sv
			}
		}
	}

	return nil
}

// quoteKey writes a key as the merged file would, so error messages point
// at what the user wrote.
func quoteKey(k string) string {
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return "'" + k + "'"
		}
	}

	return k
}

func kind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a table"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	default:
		return "a date or time"
	}
}
