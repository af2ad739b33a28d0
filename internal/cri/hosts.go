package cri

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/talosbox/talosbox/configs"
)

// secretMode is the mode of every hosts file: they may hold client keys,
// and only containerd (root) reads them.
const secretMode = 0o600

// hostsEntry is one registry host in hosts.toml. The field order is the
// key order go-toml writes, which is the order Talos writes.
type hostsEntry struct {
	Capabilities []string    `toml:"capabilities,omitempty"`
	OverridePath bool        `toml:"override_path,omitempty"`
	CA           string      `toml:"ca,omitempty"`
	Client       [][2]string `toml:"client,omitempty"`
	SkipVerify   bool        `toml:"skip_verify,omitempty"`
}

// hostsServer is the top-level part of hosts.toml: the host containerd
// falls back to after every [host] entry failed.
type hostsServer struct {
	Server string `toml:"server,omitempty"`
	hostsEntry
}

// hostsTable is a single [host.'<url>'] table. go-toml only encodes maps,
// which it sorts, while containerd tries hosts in file order; so each entry
// is encoded on its own and the pieces are concatenated.
type hostsTable struct {
	Host map[string]hostsEntry `toml:"host"`
}

type endpoint struct {
	url string
	hostsEntry
}

// RegistryHosts renders the containerd hosts tree (config_path) for the
// machine registries, as Talos does: one directory per registry ("*" is
// _default, host:port is host_port_) with a hosts.toml and the CA and
// client certificates it points at. hostsDir is where containerd will see
// the tree; it only appears inside hosts.toml. The result is sorted by Path.
func RegistryHosts(r *configs.RegistriesConfig, hostsDir string) ([]File, error) {
	if r == nil {
		return nil, nil
	}

	dirs := map[string]map[string]File{}

	for _, registry := range slices.Sorted(maps.Keys(r.Mirrors)) {
		mirror := r.Mirrors[registry]
		dir := HostDirectory(registry)
		files := map[string]File{}

		endpoints := make([]endpoint, 0, len(mirror.Endpoints))

		for _, ep := range mirror.Endpoints {
			u, err := url.Parse(ep)
			if err != nil {
				return nil, fmt.Errorf("cri: registry %q: endpoint %q: %w", registry, ep, err)
			}

			e := endpoint{url: ep, hostsEntry: hostsEntry{
				// Push is never configured: nodes only pull.
				Capabilities: []string{"pull", "resolve"},
				OverridePath: mirror.OverridePath,
			}}

			// TLS settings are keyed by the endpoint's host, not the
			// mirrored registry: that is the server the TLS session is with.
			addTLS(r, u.Host, hostsDir, dir, &e.hostsEntry, files)

			endpoints = append(endpoints, e)
		}

		var server *endpoint

		// Without fallback containerd must not try the registry itself,
		// which is what a top-level server does: it replaces the upstream
		// default, so the last mirror takes that place.
		if mirror.SkipFallback && len(endpoints) > 0 {
			server = &endpoints[len(endpoints)-1]
			endpoints = endpoints[:len(endpoints)-1]
		}

		data, err := renderHosts(server, endpoints)
		if err != nil {
			return nil, fmt.Errorf("cri: registry %q: %w", registry, err)
		}

		files["hosts.toml"] = File{Mode: secretMode, Data: data}
		dirs[dir] = files
	}

	// A TLS setting for a registry that is not mirrored still needs a
	// hosts.toml: containerd reads TLS only from there.
	for _, host := range slices.Sorted(maps.Keys(r.Config)) {
		dir := HostDirectory(host)
		if _, ok := dirs[dir]; ok {
			continue
		}

		tls := r.Config[host].TLS
		if tls == nil || (len(tls.CA) == 0 && tls.ClientIdentity == nil && !tls.InsecureSkipVerify) {
			continue
		}

		if err := configs.CheckRegistryTLS(host, tls); err != nil {
			return nil, fmt.Errorf("cri: registries.config[%q]: %w", host, err)
		}

		files := map[string]File{}
		server := endpoint{url: "https://" + defaultHost(host)}
		addTLS(r, host, hostsDir, dir, &server.hostsEntry, files)

		data, err := renderHosts(&server, nil)
		if err != nil {
			return nil, fmt.Errorf("cri: registry %q: %w", host, err)
		}

		files["hosts.toml"] = File{Mode: secretMode, Data: data}
		dirs[dir] = files
	}

	var out []File

	for dir, files := range dirs {
		for name, f := range files {
			f.Path = dir + "/" + name
			out = append(out, f)
		}
	}

	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })

	return out, nil
}

// addTLS applies registries.config[host].tls to entry and adds the files
// it refers to. The file names keep the host as written (with its colon),
// as Talos names them.
func addTLS(r *configs.RegistriesConfig, host, hostsDir, dir string, entry *hostsEntry, files map[string]File) {
	tls := r.Config[host].TLS
	if tls == nil {
		return
	}

	entry.SkipVerify = tls.InsecureSkipVerify

	if len(tls.CA) > 0 {
		name := host + "-ca.crt"
		files[name] = File{Mode: secretMode, Data: bytes.Clone(tls.CA)}
		entry.CA = path.Join(hostsDir, dir, name)
	}

	if id := tls.ClientIdentity; id != nil {
		crt, key := host+"-client.crt", host+"-client.key"
		files[crt] = File{Mode: secretMode, Data: bytes.Clone(id.Crt)}
		files[key] = File{Mode: secretMode, Data: bytes.Clone(id.Key)}
		entry.Client = [][2]string{{path.Join(hostsDir, dir, crt), path.Join(hostsDir, dir, key)}}
	}
}

// renderHosts writes hosts.toml: the optional top-level server, then the
// [host] tables in order.
func renderHosts(server *endpoint, hosts []endpoint) ([]byte, error) {
	var out bytes.Buffer

	if server != nil {
		if err := encode(&out, hostsServer{Server: server.url, hostsEntry: server.hostsEntry}); err != nil {
			return nil, err
		}
	}

	const header = "[host]\n"

	for i, h := range hosts {
		var buf bytes.Buffer

		if err := encode(&buf, hostsTable{Host: map[string]hostsEntry{h.url: h.hostsEntry}}); err != nil {
			return nil, err
		}

		b := buf.Bytes()

		// Every piece starts with its own [host] header; a table may be
		// defined only once, so all but the first are dropped.
		if i > 0 {
			b = bytes.TrimPrefix(b, []byte(header))
		}

		out.Write(b)
	}

	return out.Bytes(), nil
}

// encode writes v the way every file of this package is written: go-toml
// with indented sub-tables, Talos's layout.
func encode(buf *bytes.Buffer, v any) error {
	return toml.NewEncoder(buf).SetIndentTables(true).Encode(v)
}

// defaultHost is the host containerd connects to for a registry:
// docker.io's is registry-1.docker.io. It is containerd's
// docker.DefaultHost, written out so that the renderers need nothing of
// containerd's (only the checks in validation do).
func defaultHost(host string) string {
	if host == "docker.io" {
		return "registry-1.docker.io"
	}

	return host
}

// HostDirectory is the hosts-tree directory containerd looks up for a
// registry host: "*" is _default, and a port is written host_port_
// because containerd's lookup does the same to the colon.
func HostDirectory(host string) string {
	if host == "*" {
		return "_default"
	}

	if i := strings.LastIndex(host, ":"); i > 0 {
		return host[:i] + "_" + host[i+1:] + "_"
	}

	return host
}
