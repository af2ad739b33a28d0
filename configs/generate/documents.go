package generate

import (
	"fmt"
	"maps"
	"slices"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/pki"
)

// documents are the typed documents cfg's contract writes, in Talos's
// order; the settings they take over leave cfg (the v1alpha1 document).
//
//   - v1.12: the registry mirrors (RegistryMirrorConfig) and the stable
//     hostname (HostnameConfig auto: stable).
//   - v1.14: the Kubernetes settings (kubernetesDocuments), and the
//     discovery, host DNS, install, EPHEMERAL volume, filesystem trim and
//     workload isolation documents, where talosbox reads their kind: for
//     a kind it does not implement yet, the v1alpha1 fields say what the
//     document would (discovery, host DNS, install), or nothing is written
//     (the others have no v1alpha1 field).
func documents(cfg *configs.Config, opts Options, b *pki.Bundle) []configs.Document {
	c := opts.Contract

	var docs []configs.Document

	if c.multidocKubernetes() {
		docs = append(docs, talos114Documents(cfg, opts, b)...)
	}

	if c.multidocNetwork() {
		if r := cfg.Machine.Registries; r != nil {
			for _, host := range slices.Sorted(maps.Keys(r.Mirrors)) {
				m := &configs.RegistryMirrorConfig{Name: host}
				for _, ep := range r.Mirrors[host].Endpoints {
					m.Endpoints = append(m.Endpoints, configs.RegistryEndpoint{URL: ep})
				}

				docs = append(docs, m)
			}

			cfg.Machine.Registries = nil
		}

		docs = append(docs, &configs.HostnameConfig{Auto: configs.AutoHostnameStable})
	}

	if c.multidocKubernetes() {
		docs = append(docs, kubernetesDocuments(cfg, generated)...)
	}

	return docs
}

// optionalDocument is one of the documents Talos 1.14 writes besides the
// Kubernetes ones: its text as Talos writes it, and the v1alpha1 fields
// it takes over, cleared when the document is written.
type optionalDocument struct {
	text  string
	clear func(*configs.Config)
}

// talos114Documents are the documents Talos 1.14 writes before the
// network and Kubernetes ones, those whose kind talosbox reads.
func talos114Documents(cfg *configs.Config, opts Options, b *pki.Bundle) []configs.Document {
	m := cfg.Machine

	list := []optionalDocument{
		{"kind: DiscoveryServiceConfig\nname: default\nendpoint: https://discovery.talos.dev/\n", func(c *configs.Config) { c.Cluster.Discovery = nil }},
		{fmt.Sprintf("kind: DiscoveryIdentityConfig\nclusterID: %s\nclusterSecret: %s\n", b.Cluster.ID, b.Cluster.Secret),
			func(c *configs.Config) { c.Cluster.ID, c.Cluster.Secret = "", "" }},
	}

	if m.Install != nil && m.Install.Disk != "" {
		list = append(list, optionalDocument{
			fmt.Sprintf("kind: UnattendedInstallConfig\ninstaller:\n  image: %q\nprovisioning:\n  diskSelector:\n    match: 'disk.dev_path == %q'\n  wipe: false\n",
				m.Install.Image, m.Install.Disk),
			func(c *configs.Config) { c.Machine.Install = nil },
		})
	}

	list = append(list,
		optionalDocument{"kind: ResolverConfig\nhostDNS:\n  enabled: true\n  forwardKubeDNSToHost: true\n", func(c *configs.Config) { c.Machine.Features.HostDNS = nil }},
		optionalDocument{"kind: VolumeConfig\nname: EPHEMERAL\nmount:\n  secure: true\n", nil},
		optionalDocument{"kind: FilesystemTrimConfig\ninterval: 168h0m0s\n", nil},
		optionalDocument{"kind: SecurityProfileConfig\nworkloadIsolation: true\n", nil},
	)

	var docs []configs.Document

	for _, o := range list {
		doc := decodeDocument(o.text)
		if doc == nil {
			continue
		}

		docs = append(docs, doc)

		if o.clear != nil {
			o.clear(cfg)
		}
	}

	return docs
}

// decodeDocument reads one typed document, nil when talosbox does not
// implement its kind.
func decodeDocument(text string) configs.Document {
	cfg, err := configs.Decode([]byte("apiVersion: " + configs.DocumentAPIVersion + "\n" + text))
	if err != nil || len(cfg.Documents) != 1 {
		return nil
	}

	return cfg.Documents[0]
}
