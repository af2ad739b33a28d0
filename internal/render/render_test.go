package render_test

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/render"
)

var generated = sync.OnceValues(func() (*generate.Output, error) {
	return generate.Generate(generate.Options{
		ClusterName: "demo", Endpoint: "https://10.5.0.2:6443", KubernetesVersion: "1.34.12",
		InstallDisk: "/dev/vda", RegistryMirrors: map[string]string{"docker.io": "http://10.5.0.1:5000"},
	})
})

// gen returns fresh copies of gen config's control plane and worker.
func gen(t testing.TB) (cp, worker *configs.Config) {
	t.Helper()

	out, err := generated()
	if err != nil {
		t.Fatal(err)
	}

	return reread(t, out.ControlPlane), reread(t, out.Worker)
}

// reread is cfg through its YAML, a deep copy as a node would read it.
func reread(t testing.TB, cfg *configs.Config) *configs.Config {
	t.Helper()

	data, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	out, err := configs.Decode(data)
	if err != nil {
		t.Fatal(err)
	}

	return out
}

func mustRender(t *testing.T, cfg *configs.Config, opts render.Options) *render.Artifacts {
	t.Helper()

	arts, err := render.Render(cfg, opts)
	if err != nil {
		t.Fatalf("render: %v", err)
	}

	return arts
}

func file(t *testing.T, arts *render.Artifacts, p string) string {
	t.Helper()

	a, ok := arts.Get(p)
	if !ok {
		var have []string
		for _, x := range arts.List {
			have = append(have, x.Path)
		}

		t.Fatalf("no %s among %q", p, have)
	}

	return string(a.Data)
}

// TestRenderGenerated: gen config's configs render what a node runs, with
// the contents a reviewer looks for.
func TestRenderGenerated(t *testing.T) {
	cp, worker := gen(t)

	cp.Machine.Install.ExtraKernelArgs = []string{"net.ifnames=0"}
	cp.Cluster.Etcd.ExtraArgs = configs.ArgsOf(map[string]string{"experimental-compaction-batch-limit": "500", "quota-backend-bytes": "4294967296"})

	arts := mustRender(t, cp, render.Options{})

	for _, tc := range []struct{ path, want string }{
		{"static-pods/kube-apiserver.yaml", "image: registry.k8s.io/kube-apiserver:v1.34.12"},
		{"static-pods/kube-apiserver.yaml", "--etcd-servers=https://127.0.0.1:2379"},
		{"static-pods/kube-apiserver.yaml", "talos.dev/secrets-version: " + render.SecretsVersion},
		{"static-pods/kube-controller-manager.yaml", "--cluster-cidr=10.244.0.0/16"},
		{"static-pods/kube-scheduler.yaml", "--config=/system/config/kubernetes/kube-scheduler/scheduler-config.yaml"},
		{"fs/system/config/kubernetes/kube-apiserver/admission-control-config.yaml", "PodSecurity"},
		{"fs/etc/kubernetes/kubelet.yaml", "staticPodURL: " + render.StaticPodURL},
		{"fs/etc/kubernetes/kubelet.yaml", "protectKernelDefaults: true"},
		{"fs/etc/kubernetes/pki/ca.crt", "-----BEGIN CERTIFICATE-----"},
		{"services/kubelet.args", "--hostname-override=demo-controlplane-1\n"},
		{"services/kubelet.args", "--node-ip=10.5.0.2\n"},
		{"services/kubelet.yaml", "bootstrapKubeconfigServer: https://127.0.0.1:7445"},
		{"services/etcd.args", "--name=demo-controlplane-1\n"},
		{"services/etcd.args", "--advertise-client-urls=https://10.5.0.2:2379\n"},
		{"services/etcd.args", "--data-dir=/var/lib/etcd\n"},
		{"services/etcd.args", "--compaction-batch-limit=500\n--quota-backend-bytes=4294967296\n"},
		{"manifests/00-kubelet-bootstrapping-token.yaml", "kind: Secret"},
		{"manifests/10-kube-proxy.yaml", "kind: DaemonSet"},
		{"manifests/05-flannel.yaml", "kube-flannel"},
		{"manifests/11-core-dns.yaml", "coredns"},
		{"boot/grub/grub.cfg", "console=ttyS0 net.ifnames=0\n"},
		{"boot/grub/grub.cfg", "serial --unit=0"},
		{"boot/disk.yaml", "label: EPHEMERAL"},
		{"fs/system/etc/cri/conf.d/hosts/docker.io/hosts.toml", "[host.'http://10.5.0.1:5000']"},
		{"fs/etc/cri/conf.d/cri.toml", "config_path = '/system/etc/cri/conf.d/hosts'"},
		{"fs/etc/cri/conf.d/00-base.part", "NoPivotRoot = true"},
		{"fs/etc/cri/containerd.toml", "/etc/cri/conf.d/cri.toml"},
		{"fs/system/etc/containerd/config.toml", "/system/run/containerd/containerd.sock"},
		{render.IndexPath, "secrets: 'redacted: ******'"},
	} {
		if got := file(t, arts, tc.path); !strings.Contains(got, tc.want) {
			t.Errorf("%s has no %q:\n%s", tc.path, tc.want, got)
		}
	}

	warts := mustRender(t, worker, render.Options{Mode: configs.ModeContainer, Hostname: "W-1", NodeIPs: []netip.Addr{netip.MustParseAddr("10.5.0.3")}})

	for _, p := range []string{"static-pods/kube-apiserver.yaml", "services/etcd.args", "manifests/05-flannel.yaml", "boot/grub/grub.cfg", "boot/disk.yaml"} {
		if _, ok := warts.Get(p); ok {
			t.Errorf("a worker in a container renders %s", p)
		}
	}

	for _, tc := range []struct{ path, want string }{
		{"services/kubelet.args", "--hostname-override=w-1\n"},
		{"services/kubelet.args", "--node-ip=10.5.0.3\n"},
		{"fs/etc/kubernetes/kubelet.yaml", "protectKernelDefaults: false"},
	} {
		if got := file(t, warts, tc.path); !strings.Contains(got, tc.want) {
			t.Errorf("worker %s has no %q:\n%s", tc.path, tc.want, got)
		}
	}

	if got := file(t, warts, "fs/etc/cri/conf.d/00-base.part"); strings.Contains(got, "NoPivotRoot") {
		t.Errorf("a Docker node's runc may pivot_root:\n%s", got)
	}
}

// TestRenderSecrets: without WithSecrets no secret of the config is in
// any artifact; with it they are, where the node has them.
func TestRenderSecrets(t *testing.T) {
	cp, _ := gen(t)

	// In the v1alpha1 document as written, where redaction finds them.
	v1 := cp.V1Alpha1()
	v1.Machine.Registries = &configs.RegistriesConfig{}
	v1.Machine.Registries.Config = map[string]configs.RegistryConfig{
		"ghcr.io":    {Auth: &configs.RegistryAuth{Username: "bot", Password: "true"}},
		"docker.io":  {Auth: &configs.RegistryAuth{Auth: "Ym90OnMzY3JldC1wYXNzd29yZA=="}},
		"10.5.0.1:5": {TLS: &configs.RegistryTLS{ClientIdentity: &configs.PEMCertificateAndKey{Crt: []byte("CRT\n"), Key: []byte("-----BEGIN KEY-----\nc2VjcmV0LWtleS1ieXRlcw==\n-----END KEY-----\n")}}},
	}

	cp = reread(t, cp)

	token := cp.Cluster.Token
	_, tokenSecret, _ := strings.Cut(token, ".")
	secrets := []string{token, tokenSecret, "Ym90OnMzY3JldC1wYXNzd29yZA==", "c2VjcmV0LWtleS1ieXRlcw==", `'true'`}

	redacted := mustRender(t, cp, render.Options{})
	clear := mustRender(t, cp, render.Options{WithSecrets: true})

	for _, s := range secrets {
		for _, a := range redacted.List {
			if strings.Contains(string(a.Data), s) {
				t.Errorf("%s holds the secret %q", a.Path, s)
			}
		}
	}

	for _, tc := range []struct{ path, secret string }{
		{"manifests/00-kubelet-bootstrapping-token.yaml", tokenSecret},
		{"fs/etc/cri/conf.d/01-registries.part", `password = 'true'`},
		{"fs/etc/cri/conf.d/01-registries.part", "Ym90OnMzY3JldC1wYXNzd29yZA=="},
		{"fs/system/etc/cri/conf.d/hosts/10.5.0.1_5_/10.5.0.1:5-client.key", "c2VjcmV0LWtleS1ieXRlcw=="},
	} {
		if !strings.Contains(file(t, clear, tc.path), tc.secret) {
			t.Errorf("with secrets, %s lacks %q", tc.path, tc.secret)
		}

		if got := file(t, redacted, tc.path); !strings.Contains(got, configs.Redacted) {
			t.Errorf("redacted %s shows no %s:\n%s", tc.path, configs.Redacted, got)
		}
	}

	// A weak password is replaced where it is a string, not where the
	// same word is a value of the file's own.
	if got := file(t, redacted, "fs/etc/cri/conf.d/cri.toml"); !strings.Contains(got, "discard_unpacked_layers = true") {
		t.Errorf("redaction touched the booleans:\n%s", got)
	}
}

// TestCheck: a config the renderers refuse is reported with the config
// path that makes them, whatever else is wrong with it.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mode   configs.Mode
		worker bool
		set    func(*configs.Config)
		paths  []string
	}{
		{"apiserver denied arg", configs.ModeMetal, false, func(c *configs.Config) {
			c.Cluster.APIServer.ExtraArgs = configs.ArgsOf(map[string]string{"etcd-servers": "x"})
		}, []string{"cluster.apiServer.extraArgs"}},
		{"kubelet protected field", configs.ModeContainer, true, func(c *configs.Config) {
			c.Machine.Kubelet.ExtraConfig = configs.Unstructured{"port": 1}
		}, []string{`machine.kubelet.extraConfig["port"]`}},
		{"service subnet too small", configs.ModeMetal, false, func(c *configs.Config) {
			c.Cluster.Network.ServiceSubnets = []string{"10.96.0.0/30"}
		}, []string{"cluster.network.serviceSubnets"}},
		{"etcd extra args", configs.ModeMetal, false, func(c *configs.Config) {
			c.Cluster.Etcd.ExtraArgs = configs.ArgsOf(map[string]string{"name": "x", "snapshot-count": "-1", "no-such-flag": "1"})
		}, []string{`cluster.etcd.extraArgs["name"]`, `cluster.etcd.extraArgs["no-such-flag"]`, `cluster.etcd.extraArgs["snapshot-count"]`}},
		{"etcd election timeout", configs.ModeMetal, false, func(c *configs.Config) {
			c.Cluster.Etcd.ExtraArgs = configs.ArgsOf(map[string]string{"heartbeat-interval": "500", "election-timeout": "1000"})
		}, []string{"cluster.etcd.extraArgs"}},
		{"etcd metrics URL", configs.ModeMetal, false, func(c *configs.Config) {
			c.Cluster.Etcd.ExtraArgs = configs.ArgsOf(map[string]string{"listen-metrics-urls": "http://metrics.example:2381"})
		}, []string{"cluster.etcd.extraArgs"}},
		{"inline manifest", configs.ModeMetal, false, func(c *configs.Config) {
			c.Cluster.InlineManifests = []configs.InlineManifest{{Name: "ok", Contents: "apiVersion: v1\nkind: Namespace\n"}, {Name: "bad", Contents: "kind: Namespace\n"}}
		}, []string{"cluster.inlineManifests[1].contents"}},
		{"kernel argument", configs.ModeMetal, true, func(c *configs.Config) {
			c.Machine.Install.ExtraKernelArgs = []string{`a="b c"`}
		}, []string{"machine.install.extraKernelArgs"}},
		{"cri customization", configs.ModeContainer, true, func(c *configs.Config) {
			c.Machine.Files = []configs.MachineFile{{Path: "/etc/cri/conf.d/20-customization.part", Op: "create",
				Content: "[plugins]\n'io.containerd.cri.v1.images' = 'x'\n"}}
		}, []string{"machine.files[0].content"}},
		{"wildcard TLS", configs.ModeContainer, true, func(c *configs.Config) {
			c.Machine.Registries.Config = map[string]configs.RegistryConfig{"*": {TLS: &configs.RegistryTLS{InsecureSkipVerify: true}}}
		}, []string{"machine.registries"}},
		{"bootstrap token", configs.ModeContainer, true, func(c *configs.Config) {
			c.Cluster.Token = "nope"
		}, []string{"cluster.token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, worker := gen(t)
			if tc.worker {
				cfg = worker
			}

			if err := render.Check(cfg, tc.mode); err != nil {
				t.Fatalf("gen config's: %v", err)
			}

			tc.set(cfg)

			err := render.Check(cfg, tc.mode)

			var errs *configs.Errors
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want *configs.Errors", err)
			}

			var paths []string

			for _, e := range errs.List {
				var ve *configs.ValidationError
				if !errors.As(e, &ve) {
					t.Fatalf("%T %v is no *configs.ValidationError", e, e)
				}

				paths = append(paths, ve.Path)
			}

			slices.Sort(paths)
			paths = slices.Compact(paths)

			if !slices.Equal(paths, tc.paths) {
				t.Errorf("paths %q, want %q:\n%v", paths, tc.paths, err)
			}

			if _, rerr := render.Render(cfg, render.Options{Mode: tc.mode}); rerr == nil || rerr.Error() != err.Error() {
				t.Errorf("Render says %v, Check %v", rerr, err)
			}
		})
	}
}

// TestRenderInstallDiskExpression: the disk layout names the install disk
// as the config chooses it: by path, or by an UnattendedInstallConfig
// expression, which the node evaluates at install.
func TestRenderInstallDiskExpression(t *testing.T) {
	// gen config writes the install disk as an UnattendedInstallConfig
	// since Talos 1.14.
	c, err := generate.ParseContract("v1.14")
	if err != nil {
		t.Fatal(err)
	}

	out, err := generate.Generate(generate.Options{ClusterName: "demo", Endpoint: "https://10.5.0.2:6443", InstallDisk: "/dev/vda", Contract: c})
	if err != nil {
		t.Fatal(err)
	}

	data, err := out.ControlPlane.Encode()
	if err != nil {
		t.Fatal(err)
	}

	const byPath = `match: disk.dev_path == "/dev/vda"`
	if !strings.Contains(string(data), byPath) {
		t.Fatalf("gen config writes no %s:\n%s", byPath, data)
	}

	for _, tc := range []struct{ match, want string }{
		{byPath, "disk: /dev/vda\n"},
		{`match: disk.size > 10u * GB`, "disk: the first disk UnattendedInstallConfig's disk.size > 10u * GB matches\n"},
	} {
		cfg, err := configs.Decode([]byte(strings.Replace(string(data), byPath, tc.match, 1)))
		if err != nil {
			t.Fatal(err)
		}

		arts := mustRender(t, cfg, render.Options{Mode: configs.ModeMetal, Hostname: "demo-controlplane-1", NodeIPs: []netip.Addr{netip.MustParseAddr("10.5.0.2")}})
		if got := file(t, arts, "boot/disk.yaml"); !strings.Contains(got, tc.want) {
			t.Errorf("%s: boot/disk.yaml has no %q:\n%s", tc.match, tc.want, got)
		}
	}
}
