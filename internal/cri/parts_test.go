package cri

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestBasePart(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		in   BaseOptions
		want string
	}{
		{
			name: "defaults",
			want: `version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    discard_unpacked_layers = true
    snapshotter = 'overlayfs'
    use_local_image_pull = true

  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          pod_annotations = ['io.containerd.runc.v2.group']

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`,
		},
		{
			name: "everything set",
			in: BaseOptions{
				RestrictOOMScoreAdj: true,
				CNIBinDirs:          []string{"/opt/cni/bin"},
				CNIConfDir:          "/etc/cni/net.d",
				SandboxImage:        "registry.k8s.io/pause:3.10",
				Snapshotter:         "native",
			},
			want: `version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    discard_unpacked_layers = true
    snapshotter = 'native'
    use_local_image_pull = true

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = 'registry.k8s.io/pause:3.10'

  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true

    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/opt/cni/bin']
      conf_dir = '/etc/cni/net.d'

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          pod_annotations = ['io.containerd.runc.v2.group']

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`,
		},
		{
			name: "no pivot_root on metal",
			in:   BaseOptions{NoPivotRoot: true},
			want: `version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    discard_unpacked_layers = true
    snapshotter = 'overlayfs'
    use_local_image_pull = true

  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          pod_annotations = ['io.containerd.runc.v2.group']

          [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
            NoPivotRoot = true

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`,
		},
		{
			name: "restrict_oom_score_adj only when asked",
			in:   BaseOptions{CNIConfDir: "/etc/cni/net.d"},
			want: `version = 3

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    discard_unpacked_layers = true
    snapshotter = 'overlayfs'
    use_local_image_pull = true

  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      conf_dir = '/etc/cni/net.d'

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes]
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
          pod_annotations = ['io.containerd.runc.v2.group']

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
`,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got := BasePart(tt.in)
			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}

			if err := ValidatePart(BasePartName, got); err != nil {
				t.Error(err)
			}
		})
	}
}

// registriesWant is Talos's testdata/cri.toml for the same input.
const registriesWant = `[plugins]
  [plugins.'io.containerd.cri.v1.images']
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '/etc/cri/conf.d/hosts'

      [plugins.'io.containerd.cri.v1.images'.registry.configs]
        [plugins.'io.containerd.cri.v1.images'.registry.configs.'registry-1.docker.io']
          [plugins.'io.containerd.cri.v1.images'.registry.configs.'registry-1.docker.io'.auth]
            username = 'root'
            password = 'topsecret'
            auth = ''
            identitytoken = ''

        [plugins.'io.containerd.cri.v1.images'.registry.configs.'some.host:123']
          [plugins.'io.containerd.cri.v1.images'.registry.configs.'some.host:123'.auth]
            username = 'root'
            password = 'secret'
            auth = 'auth'
            identitytoken = 'token'
`

func TestRegistriesPart(t *testing.T) {
	t.Parallel()

	noAuth := `[plugins]
  [plugins.'io.containerd.cri.v1.images']
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '/etc/cri/conf.d/hosts'

      [plugins.'io.containerd.cri.v1.images'.registry.configs]
`

	tests := []struct {
		name string
		in   *configs.RegistriesConfig
		want string
	}{
		{name: "nil registries", want: noAuth},
		{
			name: "mirrors and TLS give no auth",
			in: &configs.RegistriesConfig{
				Mirrors: map[string]configs.RegistryMirror{"docker.io": {Endpoints: []string{"https://m"}}},
				Config:  map[string]configs.RegistryConfig{"m": {TLS: &configs.RegistryTLS{InsecureSkipVerify: true}}},
			},
			want: noAuth,
		},
		{
			name: "auth keyed by the default host",
			in: &configs.RegistriesConfig{
				Mirrors: map[string]configs.RegistryMirror{"docker.io": {Endpoints: []string{"https://registry-1.docker.io"}}},
				Config: map[string]configs.RegistryConfig{
					"some.host:123": {
						Auth: &configs.RegistryAuth{Username: "root", Password: "secret", Auth: "auth", IdentityToken: "token"},
						TLS:  &configs.RegistryTLS{InsecureSkipVerify: true},
					},
					"docker.io": {Auth: &configs.RegistryAuth{Username: "root", Password: "topsecret"}},
				},
			},
			want: registriesWant,
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			got, err := RegistriesPart(tt.in, hostsDir)
			if err != nil {
				t.Fatal(err)
			}

			if string(got) != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestValidatePart(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name, data, wantErr string
	}{
		{name: "empty", data: ""},
		{name: "table", data: "[plugins.'io.containerd.cri.v1.runtime']\nenable_cdi = true\n"},
		{name: "unclosed table", data: "version = 3\n\n[plugins\n", wantErr: "cri: 20-customization.part: line 3: "},
		{name: "missing value", data: "a = 1\nb =\n", wantErr: "cri: 20-customization.part: line 2: "},
		{name: "duplicate key", data: "a = 1\na = 2\n", wantErr: "cri: 20-customization.part: line 2: "},
		{name: "yaml, not toml", data: "plugins:\n  cri: {}\n", wantErr: "cri: 20-customization.part: line 1: "},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			err := ValidatePart(CustomizationPartName, []byte(tt.data))

			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), "toml: "):
				t.Errorf("error %q repeats go-toml's prefix", err)
			}
		})
	}
}

func writeParts(t *testing.T, parts map[string]string) string {
	t.Helper()

	dir := t.TempDir()

	for name, data := range parts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	return dir
}

func TestMergeParts(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name        string
		parts       map[string]string
		wantBody    string
		wantSources []string
		wantErr     string
	}{
		{
			name: "no parts",
		},
		{
			name: "name order, later scalars win, tables merge, arrays append",
			parts: map[string]string{
				"20-customization.part": "[plugins.'io.containerd.cri.v1.runtime'.cni]\nconf_dir = '/var/cni'\nbin_dirs = ['/opt/extra']\n[metrics]\naddress = 'second'\n",
				"00-base.part":          "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.cni]\nbin_dirs = ['/opt/cni/bin']\nconf_dir = '/etc/cni/net.d'\n[metrics]\naddress = 'first'\ngrpc_histogram = true\n",
				"01-registries.part":    "[plugins.'io.containerd.cri.v1.images'.registry]\nconfig_path = '/etc/cri/conf.d/hosts'\n",
				"notes.txt":             "not a part",
			},
			wantSources: []string{"00-base.part", "01-registries.part", "20-customization.part"},
			wantBody: `version = 3

[metrics]
  address = 'second'
  grpc_histogram = true

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = '/etc/cri/conf.d/hosts'

  [plugins.'io.containerd.cri.v1.runtime']
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ['/opt/cni/bin', '/opt/extra']
      conf_dir = '/var/cni'
`,
		},
		{
			name: "dotted keys and tables merge alike",
			parts: map[string]string{
				"a.part": "plugins.x.a = 1\n",
				"b.part": "[plugins.x]\nb = 2\n",
			},
			wantSources: []string{"a.part", "b.part"},
			wantBody:    "[plugins]\n  [plugins.x]\n    a = 1\n    b = 2\n",
		},
		{
			name: "invalid part names the file and line",
			parts: map[string]string{
				"00-base.part":          "version = 3\n",
				"20-customization.part": "[plugins]\nx = 1\n[oops\n",
			},
			wantErr: "cri: 20-customization.part: line 3: ",
		},
		{
			name: "table replaced by a value is refused",
			parts: map[string]string{
				"00-base.part":          "[plugins.'io.containerd.nri.v1.nri']\ndisable = true\n",
				"20-customization.part": "[plugins]\n'io.containerd.nri.v1.nri' = false\n",
			},
			wantErr: "cri: 20-customization.part: key plugins.'io.containerd.nri.v1.nri': cannot merge a boolean into a table",
		},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			dir := writeParts(t, tt.parts)

			got, sources, err := MergeParts(dir)

			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want prefix %q", err, tt.wantErr)
				}

				return
			}

			if err != nil {
				t.Fatal(err)
			}

			if !reflect.DeepEqual(sources, tt.wantSources) {
				t.Errorf("sources = %q, want %q", sources, tt.wantSources)
			}

			var header strings.Builder

			for _, name := range tt.wantSources {
				fmt.Fprintf(&header, "## %s (sha256:%x)\n", name, sha256.Sum256([]byte(tt.parts[name])))
			}

			if len(tt.wantSources) > 0 {
				header.WriteString("\n")
			}

			if want := header.String() + tt.wantBody; string(got) != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

func TestMergePartsSkipsDirectories(t *testing.T) {
	t.Parallel()

	dir := writeParts(t, map[string]string{"00-base.part": "a = 1\n"})

	if err := os.Mkdir(filepath.Join(dir, "10-dir.part"), 0o700); err != nil {
		t.Fatal(err)
	}

	_, sources, err := MergeParts(dir)
	if err != nil {
		t.Fatal(err)
	}

	if !reflect.DeepEqual(sources, []string{"00-base.part"}) {
		t.Errorf("sources = %q", sources)
	}
}

// The generated parts merge with each other and with a user part into a
// config that still parses.
func TestMergeGeneratedParts(t *testing.T) {
	t.Parallel()

	reg, err := RegistriesPart(&configs.RegistriesConfig{Config: map[string]configs.RegistryConfig{
		"docker.io": {Auth: &configs.RegistryAuth{Username: "u", Password: "p"}},
	}}, hostsDir)
	if err != nil {
		t.Fatal(err)
	}

	dir := writeParts(t, map[string]string{
		BasePartName:          string(BasePart(BaseOptions{CNIBinDirs: []string{"/opt/cni/bin"}})),
		RegistriesPartName:    string(reg),
		CustomizationPartName: "[plugins.'io.containerd.cri.v1.images']\ndiscard_unpacked_layers = false\n",
	})

	merged, _, err := MergeParts(dir)
	if err != nil {
		t.Fatal(err)
	}

	if err := ValidatePart("cri.toml", merged); err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{
		"discard_unpacked_layers = false\n",
		"config_path = '/etc/cri/conf.d/hosts'\n",
		"[plugins.'io.containerd.cri.v1.images'.registry.configs.'registry-1.docker.io'.auth]\n",
		"bin_dirs = ['/opt/cni/bin']\n",
		"version = 3\n",
	} {
		if !strings.Contains(string(merged), want) {
			t.Errorf("merged config lacks %q:\n%s", want, merged)
		}
	}
}
