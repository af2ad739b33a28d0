package provision

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"
)

// defaultEntrypoint runs the node's PID 1.
var defaultEntrypoint = []string{"/talosbox", "machined"}

// imagePATH is set explicitly: a scratch image has no PATH, and applets are found through it.
const imagePATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is the modification time of every entry, so that the same binary always yields the
// same build context and the builder cache can hit.
var epoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// rootfsDirs are the directories a scratch image lacks and a node expects, with their modes.
// Docker mounts /proc, /sys and /dev itself, but only onto existing mount points when the root
// filesystem is read-only, so they are created here too.
var rootfsDirs = []struct {
	path string
	mode int64
}{
	{"dev", 0o755},
	{"etc", 0o755},
	{"etc/cri", 0o755},
	{"etc/ssl", 0o755}, // kube-proxy mounts /etc/ssl/certs (hostPath)
	{"etc/ssl/certs", 0o755},
	// kube-proxy and flannel mount /lib/modules from the host (hostPath):
	// it must exist on a read-only root even when the host has no modules.
	{"lib", 0o755},
	{"lib/modules", 0o755},
	{"proc", 0o555},
	{"run", 0o755},
	{"sbin", 0o755},
	{"sys", 0o555},
	{"system", 0o755},
	{"tmp", 0o1777},
	{"usr", 0o755},
	{"usr/local", 0o755},
	{"usr/local/bin", 0o755},
	{"var", 0o755},
	{"var/lib", 0o755},
	{"var/lib/talosbox", 0o700},
	{"var/log", 0o755},
	{"var/tmp", 0o1777},
}

// buildContext returns the tar build context for req: a Dockerfile and a rootfs/ tree that the
// Dockerfile copies onto scratch in one layer.
func buildContext(req BuildRequest) (*bytes.Buffer, error) {
	dockerfile, err := renderDockerfile(req)
	if err != nil {
		return nil, err
	}
	bin, err := os.Open(req.Binary)
	if err != nil {
		return nil, fmt.Errorf("talosbox binary: %w", err)
	}
	defer bin.Close()
	st, err := bin.Stat()
	if err != nil {
		return nil, fmt.Errorf("talosbox binary: %w", err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("talosbox binary %s is not a regular file", req.Binary)
	}
	links, err := appletPaths(req.Applets)
	if err != nil {
		return nil, err
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h *tar.Header, body io.Reader) error {
		h.ModTime, h.Uid, h.Gid, h.Format = epoch, 0, 0, tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("build context %s: %w", h.Name, err)
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				return fmt.Errorf("build context %s: %w", h.Name, err)
			}
		}
		return nil
	}

	if err := add(&tar.Header{Name: "Dockerfile", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(dockerfile))},
		strings.NewReader(dockerfile)); err != nil {
		return nil, err
	}
	if err := add(&tar.Header{Name: "rootfs/", Typeflag: tar.TypeDir, Mode: 0o755}, nil); err != nil {
		return nil, err
	}
	dirs := map[string]bool{}
	for _, d := range rootfsDirs {
		dirs[d.path] = true
		if err := add(&tar.Header{Name: "rootfs/" + d.path + "/", Typeflag: tar.TypeDir, Mode: d.mode}, nil); err != nil {
			return nil, err
		}
	}
	// Applets, files and links may live in directories the list above
	// lacks (e.g. "/opt/bin/x").
	parentDirs := func(rel string) error {
		for _, dir := range parents(rel) {
			if !dirs[dir] {
				dirs[dir] = true
				if err := add(&tar.Header{Name: "rootfs/" + dir + "/", Typeflag: tar.TypeDir, Mode: 0o755}, nil); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, l := range links {
		if err := parentDirs(l); err != nil {
			return nil, err
		}
	}
	if err := add(&tar.Header{Name: "rootfs/talosbox", Typeflag: tar.TypeReg, Mode: 0o755, Size: st.Size()}, bin); err != nil {
		return nil, err
	}
	for _, l := range links {
		if err := add(&tar.Header{Name: "rootfs/" + l, Typeflag: tar.TypeSymlink, Linkname: "/talosbox", Mode: 0o777}, nil); err != nil {
			return nil, err
		}
	}
	if len(req.OSRelease) > 0 {
		if err := add(&tar.Header{Name: "rootfs/etc/os-release", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(req.OSRelease))},
			bytes.NewReader(req.OSRelease)); err != nil {
			return nil, err
		}
	}
	for _, dst := range slices.Sorted(maps.Keys(req.Files)) {
		rel := strings.TrimPrefix(path.Clean(dst), "/")
		if !path.IsAbs(dst) || rel == "" || rel == "talosbox" || slices.Contains(links, rel) {
			return nil, fmt.Errorf("%w: image file %q", ErrInvalidRequest, dst)
		}
		if err := parentDirs(rel); err != nil {
			return nil, err
		}
		if err := addFile(add, "rootfs/"+rel, req.Files[dst]); err != nil {
			return nil, err
		}
	}
	for _, dst := range slices.Sorted(maps.Keys(req.Links)) {
		rel := strings.TrimPrefix(path.Clean(dst), "/")
		_, isFile := req.Files["/"+rel]
		if !path.IsAbs(dst) || rel == "" || rel == "talosbox" || slices.Contains(links, rel) || isFile || req.Links[dst] == "" {
			return nil, fmt.Errorf("%w: image link %q -> %q", ErrInvalidRequest, dst, req.Links[dst])
		}
		if err := parentDirs(rel); err != nil {
			return nil, err
		}
		if err := add(&tar.Header{Name: "rootfs/" + rel, Typeflag: tar.TypeSymlink, Linkname: req.Links[dst], Mode: 0o777}, nil); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("build context: %w", err)
	}
	return &buf, nil
}

// addFile adds the host file src (following symlinks) as name, mode 0755.
func addFile(add func(*tar.Header, io.Reader) error, name, src string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("image file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("image file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("image file %s is not a regular file", src)
	}
	return add(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o755, Size: st.Size()}, f)
}

// appletPaths maps applet names to their symlink paths inside rootfs/, without a leading slash.
func appletPaths(applets []string) ([]string, error) {
	var out []string
	for _, a := range applets {
		p := a
		if !strings.HasPrefix(a, "/") {
			if a == "" || strings.Contains(a, "/") || a == "." || a == ".." {
				return nil, fmt.Errorf("%w: applet name %q", ErrInvalidRequest, a)
			}
			p = "/usr/local/bin/" + a
		}
		p = path.Clean(p)
		if p == "/" || p == "/talosbox" {
			return nil, fmt.Errorf("%w: applet path %q", ErrInvalidRequest, a)
		}
		p = strings.TrimPrefix(p, "/")
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// parents returns the ancestor directories of a relative path, outermost first.
func parents(p string) []string {
	var out []string
	for d := path.Dir(p); d != "." && d != "/"; d = path.Dir(d) {
		out = append([]string{d}, out...)
	}
	return out
}

// renderDockerfile writes the Dockerfile. Entrypoint and Cmd use the JSON (exec) form, which
// needs no shell, of which a scratch image has none.
func renderDockerfile(req BuildRequest) (string, error) {
	entrypoint := req.Entrypoint
	if len(entrypoint) == 0 {
		entrypoint = defaultEntrypoint
	}
	var b strings.Builder
	b.WriteString("FROM scratch\nCOPY rootfs/ /\n")
	fmt.Fprintf(&b, "ENV PATH=%s\n", imagePATH)
	for _, kv := range req.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !validEnvKey(k) {
			return "", fmt.Errorf("%w: image env %q: want KEY=VALUE", ErrInvalidRequest, kv)
		}
		if strings.ContainsAny(v, "\n\r\x00") {
			return "", fmt.Errorf("%w: image env %s: value has a line break", ErrInvalidRequest, k)
		}
		fmt.Fprintf(&b, "ENV %s=%s\n", k, quoteDockerfile(v))
	}
	ep, err := json.Marshal(entrypoint)
	if err != nil {
		return "", fmt.Errorf("entrypoint: %w", err)
	}
	fmt.Fprintf(&b, "ENTRYPOINT %s\n", ep)
	if req.Cmd != nil {
		cmd, err := json.Marshal(req.Cmd)
		if err != nil {
			return "", fmt.Errorf("cmd: %w", err)
		}
		fmt.Fprintf(&b, "CMD %s\n", cmd)
	}
	return b.String(), nil
}

// quoteDockerfile double-quotes an ENV value. The Dockerfile parser treats backslash, double
// quote and $ (variable expansion) specially inside double quotes, so those are escaped.
func quoteDockerfile(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	return `"` + r.Replace(v) + `"`
}

// validEnvKey accepts the portable environment variable names: [A-Za-z_][A-Za-z0-9_]*.
func validEnvKey(k string) bool {
	if k == "" {
		return false
	}
	for i, c := range k {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
