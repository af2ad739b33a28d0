package cri

import (
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const hostsDir = "/etc/cri/conf.d/hosts"

func hostsFile(path, data string) File {
	return File{Path: path, Mode: 0o600, Data: []byte(data)}
}

// The expected bytes of the Talos cases are those of Talos's own
// hosts_test.go, so a difference from Talos shows up here.
func TestRegistryHosts(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      *configs.RegistriesConfig
		want    []File
		wantErr string
	}{
		{
			name: "nil registries",
		},
		{
			name: "mirrors, wildcard is _default",
			in: &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{
				"docker.io": {Endpoints: []string{"https://registry-1.docker.io", "https://registry-2.docker.io"}},
				"*":         {Endpoints: []string{"https://my-registry"}},
			}},
			want: []File{
				hostsFile("_default/hosts.toml", "[host]\n  [host.'https://my-registry']\n    capabilities = ['pull', 'resolve']\n"),
				hostsFile("docker.io/hosts.toml", "[host]\n  [host.'https://registry-1.docker.io']\n    capabilities = ['pull', 'resolve']\n  [host.'https://registry-2.docker.io']\n    capabilities = ['pull', 'resolve']\n"),
			},
		},
		{
			name: "endpoints keep their order and scheme",
			in: &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{
				"ghcr.io": {Endpoints: []string{"http://zz.local:5000", "https://aa.local"}},
			}},
			want: []File{
				hostsFile("ghcr.io/hosts.toml", "[host]\n  [host.'http://zz.local:5000']\n    capabilities = ['pull', 'resolve']\n  [host.'https://aa.local']\n    capabilities = ['pull', 'resolve']\n"),
			},
		},
		{
			name: "host:port directory",
			in: &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{
				"registry.local:5000": {Endpoints: []string{"http://10.5.0.1:5000"}},
			}},
			want: []File{
				hostsFile("registry.local_5000_/hosts.toml", "[host]\n  [host.'http://10.5.0.1:5000']\n    capabilities = ['pull', 'resolve']\n"),
			},
		},
		{
			name: "TLS of a mirror endpoint, and TLS-only hosts",
			in: &configs.RegistriesConfig{
				Mirrors: map[string]configs.RegistryMirror{
					"docker.io": {Endpoints: []string{"https://registry-1.docker.io", "https://registry-2.docker.io"}},
				},
				Config: map[string]configs.RegistryConfig{
					"some.host:123": {
						TLS: &configs.RegistryTLS{
							InsecureSkipVerify: true,
							CA:                 configs.Base64("cacert"),
							ClientIdentity:     &configs.PEMCertificateAndKey{Crt: configs.Base64("clientcert"), Key: configs.Base64("clientkey")},
						},
						Auth: &configs.RegistryAuth{Username: "root", Password: "secret"},
					},
					"registry-2.docker.io": {TLS: &configs.RegistryTLS{InsecureSkipVerify: true}},
					// Auth alone needs no hosts.toml.
					"auth-only.example.com": {Auth: &configs.RegistryAuth{Username: "u"}},
					// Nor does an empty TLS block.
					"empty-tls.example.com": {TLS: &configs.RegistryTLS{}},
				},
			},
			want: []File{
				hostsFile("docker.io/hosts.toml", "[host]\n  [host.'https://registry-1.docker.io']\n    capabilities = ['pull', 'resolve']\n  [host.'https://registry-2.docker.io']\n    capabilities = ['pull', 'resolve']\n    skip_verify = true\n"),
				hostsFile("registry-2.docker.io/hosts.toml", "server = 'https://registry-2.docker.io'\nskip_verify = true\n"),
				hostsFile("some.host_123_/hosts.toml", "server = 'https://some.host:123'\nca = '/etc/cri/conf.d/hosts/some.host_123_/some.host:123-ca.crt'\nclient = [['/etc/cri/conf.d/hosts/some.host_123_/some.host:123-client.crt', '/etc/cri/conf.d/hosts/some.host_123_/some.host:123-client.key']]\nskip_verify = true\n"),
				hostsFile("some.host_123_/some.host:123-ca.crt", "cacert"),
				hostsFile("some.host_123_/some.host:123-client.crt", "clientcert"),
				hostsFile("some.host_123_/some.host:123-client.key", "clientkey"),
			},
		},
		{
			name: "TLS-only docker.io is served by its default host",
			in: &configs.RegistriesConfig{Config: map[string]configs.RegistryConfig{
				"docker.io": {TLS: &configs.RegistryTLS{CA: configs.Base64("ca")}},
			}},
			want: []File{
				hostsFile("docker.io/docker.io-ca.crt", "ca"),
				hostsFile("docker.io/hosts.toml", "server = 'https://registry-1.docker.io'\nca = '/etc/cri/conf.d/hosts/docker.io/docker.io-ca.crt'\n"),
			},
		},
		{
			name: "wildcard mirror with an endpoint CA",
			in: &configs.RegistriesConfig{
				Mirrors: map[string]configs.RegistryMirror{
					"*": {Endpoints: []string{"https://my-registry1", "https://my-registry2"}},
				},
				Config: map[string]configs.RegistryConfig{
					"my-registry1": {TLS: &configs.RegistryTLS{CA: configs.Base64("allcert")}},
				},
			},
			want: []File{
				hostsFile("_default/hosts.toml", "[host]\n  [host.'https://my-registry1']\n    capabilities = ['pull', 'resolve']\n    ca = '/etc/cri/conf.d/hosts/_default/my-registry1-ca.crt'\n  [host.'https://my-registry2']\n    capabilities = ['pull', 'resolve']\n"),
				hostsFile("_default/my-registry1-ca.crt", "allcert"),
				hostsFile("my-registry1/hosts.toml", "server = 'https://my-registry1'\nca = '/etc/cri/conf.d/hosts/my-registry1/my-registry1-ca.crt'\n"),
				hostsFile("my-registry1/my-registry1-ca.crt", "allcert"),
			},
		},
		{
			name: "wildcard TLS refused",
			in: &configs.RegistriesConfig{Config: map[string]configs.RegistryConfig{
				"*": {TLS: &configs.RegistryTLS{CA: configs.Base64("allcert")}},
			}},
			wantErr: `cri: registries.config["*"]: TLS settings for the wildcard host "*" are not supported: give them for each registry's host`,
		},
		{
			name: "wildcard auth is not TLS",
			in: &configs.RegistriesConfig{Config: map[string]configs.RegistryConfig{
				"*": {Auth: &configs.RegistryAuth{Username: "u"}},
			}},
		},
		{
			name: "overridePath (Harbor proxy cache)",
			in: &configs.RegistriesConfig{
				Mirrors: map[string]configs.RegistryMirror{
					"docker.io": {Endpoints: []string{"https://harbor/v2/mirrors/proxy.docker.io"}, OverridePath: true},
					"ghcr.io":   {Endpoints: []string{"https://harbor/v2/mirrors/proxy.ghcr.io"}, OverridePath: true},
				},
				Config: map[string]configs.RegistryConfig{
					"harbor": {TLS: &configs.RegistryTLS{InsecureSkipVerify: true}},
				},
			},
			want: []File{
				hostsFile("docker.io/hosts.toml", "[host]\n  [host.'https://harbor/v2/mirrors/proxy.docker.io']\n    capabilities = ['pull', 'resolve']\n    override_path = true\n    skip_verify = true\n"),
				hostsFile("ghcr.io/hosts.toml", "[host]\n  [host.'https://harbor/v2/mirrors/proxy.ghcr.io']\n    capabilities = ['pull', 'resolve']\n    override_path = true\n    skip_verify = true\n"),
				hostsFile("harbor/hosts.toml", "server = 'https://harbor'\nskip_verify = true\n"),
			},
		},
		{
			name: "skipFallback makes the last endpoint the server",
			in: &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{
				"docker.io": {
					Endpoints:    []string{"https://harbor/v2/mirrors/proxy.docker.io", "http://127.0.0.1:5001/v2/"},
					OverridePath: true,
					SkipFallback: true,
				},
				"ghcr.io": {Endpoints: []string{"http://127.0.0.1:5002"}, SkipFallback: true},
			}},
			want: []File{
				hostsFile("docker.io/hosts.toml", "server = 'http://127.0.0.1:5001/v2/'\ncapabilities = ['pull', 'resolve']\noverride_path = true\n[host]\n  [host.'https://harbor/v2/mirrors/proxy.docker.io']\n    capabilities = ['pull', 'resolve']\n    override_path = true\n"),
				hostsFile("ghcr.io/hosts.toml", "server = 'http://127.0.0.1:5002'\ncapabilities = ['pull', 'resolve']\n"),
			},
		},
		{
			name: "skipFallback server keeps its TLS",
			in: &configs.RegistriesConfig{
				Mirrors: map[string]configs.RegistryMirror{
					"quay.io": {Endpoints: []string{"https://m.local:8443"}, SkipFallback: true},
				},
				Config: map[string]configs.RegistryConfig{
					"m.local:8443": {TLS: &configs.RegistryTLS{CA: configs.Base64("ca")}},
				},
			},
			want: []File{
				hostsFile("m.local_8443_/hosts.toml", "server = 'https://m.local:8443'\nca = '/etc/cri/conf.d/hosts/m.local_8443_/m.local:8443-ca.crt'\n"),
				hostsFile("m.local_8443_/m.local:8443-ca.crt", "ca"),
				hostsFile("quay.io/hosts.toml", "server = 'https://m.local:8443'\ncapabilities = ['pull', 'resolve']\nca = '/etc/cri/conf.d/hosts/quay.io/m.local:8443-ca.crt'\n"),
				hostsFile("quay.io/m.local:8443-ca.crt", "ca"),
			},
		},
		{
			name: "a mirrored registry's own TLS entry is not repeated",
			in: &configs.RegistriesConfig{
				Mirrors: map[string]configs.RegistryMirror{
					"r.local:5000": {Endpoints: []string{"https://r.local:5000"}},
				},
				Config: map[string]configs.RegistryConfig{
					"r.local:5000": {TLS: &configs.RegistryTLS{InsecureSkipVerify: true}},
				},
			},
			want: []File{
				hostsFile("r.local_5000_/hosts.toml", "[host]\n  [host.'https://r.local:5000']\n    capabilities = ['pull', 'resolve']\n    skip_verify = true\n"),
			},
		},
		{
			name: "unparsable endpoint",
			in: &configs.RegistriesConfig{Mirrors: map[string]configs.RegistryMirror{
				"docker.io": {Endpoints: []string{"https://bad host:x"}},
			}},
			wantErr: `cri: registry "docker.io": endpoint "https://bad host:x": parse`,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := RegistryHosts(tt.in, hostsDir)

			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got:\n%s\nwant:\n%s", dumpFiles(got), dumpFiles(tt.want))
			}

			// Same input, same bytes: map order must not leak out.
			again, _ := RegistryHosts(tt.in, hostsDir)
			if !reflect.DeepEqual(again, got) {
				t.Error("output is not deterministic")
			}
		})
	}
}

func dumpFiles(files []File) string {
	var b strings.Builder

	for _, f := range files {
		b.WriteString(f.Path + " " + f.Mode.String() + "\n" + string(f.Data) + "\n")
	}

	return b.String()
}

func TestHostDirectory(t *testing.T) {
	t.Parallel()

	for in, want := range map[string]string{
		"*":                   "_default",
		"docker.io":           "docker.io",
		"host:5000":           "host_5000_",
		"registry.local:5000": "registry.local_5000_",
		"[::1]:5000":          "[::1]_5000_",
	} {
		if got := HostDirectory(in); got != want {
			t.Errorf("HostDirectory(%q) = %q, want %q", in, got, want)
		}
	}
}
