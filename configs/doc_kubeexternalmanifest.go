package configs

import (
	"net/url"
	"strings"
)

// KubeExternalManifestConfig is Talos's KubeExternalManifestConfig: a
// manifest the control plane downloads and applies, named, with the
// HTTP headers of its own download. v1alpha1's cluster.extraManifests
// share one set of headers, so the node reads these from the documents
// (applied after the bootstrap manifests, as extraManifests are).
type KubeExternalManifestConfig struct {
	Name    string            `yaml:"name"`
	Headers map[string]string `yaml:"headers,omitempty"`
	URL     string            `yaml:"url"`
}

// Kind implements Document.
func (*KubeExternalManifestConfig) Kind() string { return "KubeExternalManifestConfig" }

// DocumentName implements NamedDocument.
func (k *KubeExternalManifestConfig) DocumentName() string { return k.Name }

func (k *KubeExternalManifestConfig) check(v *validator, path string) {
	v.objectName(path+".name", "manifest", k.Name)

	if k.URL == "" {
		v.errorf(path+".url", "manifest URL is required (http or https)")
	} else if u, err := url.Parse(k.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		v.check(path+".url", checkURL("manifest URL", k.URL, "http", "https"))
	}

	for _, h := range sortedStrings(k.Headers) {
		if h == "" || strings.ContainsAny(h, " :\t\r\n") {
			v.errorf(keyPath(path+".headers", h), "invalid HTTP header name %q", h)
		}
	}
}

// fold: v1alpha1's manifests share one set of headers, so the documents
// are read as they are (ExternalManifests).
func (k *KubeExternalManifestConfig) fold(*folding) {}

// ExternalManifest is a manifest the control plane downloads.
type ExternalManifest struct {
	// ID orders and names it: "99-" then the URL (cluster.extraManifests,
	// with cluster.extraManifestHeaders) or the document's name.
	ID      string
	URL     string
	Headers map[string]string
}

// ExternalManifests are the manifests the control plane downloads
// besides the CNI's: cluster.extraManifests, then the
// KubeExternalManifestConfig documents.
func ExternalManifests(c *Config) []ExternalManifest {
	var out []ExternalManifest

	if c.Cluster != nil {
		for _, u := range c.Cluster.ExtraManifests {
			out = append(out, ExternalManifest{ID: "99-" + u, URL: u, Headers: c.Cluster.ExtraManifestHeaders})
		}
	}

	for _, d := range DocumentsOf[*KubeExternalManifestConfig](c) {
		out = append(out, ExternalManifest{ID: "99-" + d.Name, URL: d.URL, Headers: d.Headers})
	}

	return out
}
