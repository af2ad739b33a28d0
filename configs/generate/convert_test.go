package generate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// TestToKubernetesDocumentsOfGenerated: a v1.13 config converted is the
// v1.14 config gen config writes from the same bundle, as far as
// Kubernetes goes (the conversion's job: the 1.14 contract's other
// documents and defaults are not its business), but for the encryption
// config's identity provider, which the conversion keeps (the node's own
// had it: what was stored before encryption stays readable).
func TestToKubernetesDocumentsOfGenerated(t *testing.T) {
	t.Parallel()

	opts := generate.Options{ClusterName: "conv", Endpoint: "https://10.5.0.2:6443", Secrets: sharedBundle(t), AdditionalSANs: []string{"10.5.0.50"},
		RegistryMirrors: map[string]string{"docker.io": "http://10.5.0.1:5000"}}

	opts.Contract = generate.Default
	old, err := generate.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}

	opts.Contract = generate.Contract{Major: 1, Minor: 14}
	want, err := generate.Generate(opts)
	if err != nil {
		t.Fatal(err)
	}

	for i, pair := range [][2]*configs.Config{{old.ControlPlane, want.ControlPlane}, {old.Worker, want.Worker}} {
		got, err := generate.ToKubernetesDocuments(pair[0])
		if err != nil {
			t.Fatal(err)
		}

		if _, err := got.Validate(configs.ModeMetal, configs.WithStrict(true)); err != nil {
			t.Fatalf("converted %s: %v", got.Machine.Type, err)
		}

		roundTrip(t, got)

		kinds := func(c *configs.Config) []string {
			var out []string
			for _, d := range c.Documents {
				if kubernetesDocument(d.Kind()) {
					out = append(out, configs.DocumentPath(d))
				}
			}

			slices.Sort(out)

			return out
		}

		if !slices.Equal(kinds(got), kinds(pair[1])) {
			t.Errorf("%s: documents\n got  %v\n want %v", got.Machine.Type, kinds(got), kinds(pair[1]))
		}

		changes, err := configs.Compare(pair[1], got)
		if err != nil {
			t.Fatal(err)
		}

		for _, c := range changes {
			if i == 0 && c.Path[0] == "KubeEtcdEncryptionConfig" && strings.HasSuffix(c.Path.String(), ".identity") {
				continue
			}

			where, _, _ := strings.Cut(cmpOr(c.Where, c.Path.String()), ".")
			if kind, _, _ := strings.Cut(where, "["); kind[0] >= 'A' && kind[0] <= 'Z' && !kubernetesDocument(kind) {
				continue // a 1.14 document of another family
			}

			if p := c.Path.String(); p == "machine.network" || p == "machine.install.grubUseUKICmdline" {
				continue // the 1.13 and 1.14 contracts' v1alpha1 defaults
			}

			t.Errorf("%s: %s", got.Machine.Type, c)
		}

		// The original is untouched.
		if pair[0].V1Alpha1().Cluster.ClusterName != "conv" {
			t.Error("the conversion changed its input")
		}
	}
}

// kubernetesDocument: the kinds the conversion writes (and those the
// generated configs of both contracts share).
func kubernetesDocument(kind string) bool {
	return strings.HasPrefix(kind, "Kube") || kind == "HostnameConfig" || kind == "RegistryMirrorConfig"
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}

	return b
}

// TestToKubernetesDocuments: what gen config never writes moves too
// (flags, resources, manifests, static pods, a custom CNI, the node's
// registration), and the node's effective config is the same; what no
// document can say is refused, naming it.
func TestToKubernetesDocuments(t *testing.T) {
	t.Parallel()

	out, err := generate.Generate(generate.Options{ClusterName: "conv", Endpoint: "https://10.5.0.2:6443", Secrets: sharedBundle(t)})
	if err != nil {
		t.Fatal(err)
	}

	patch := func(t *testing.T, cfg *configs.Config, p string) *configs.Config {
		t.Helper()

		data, err := cfg.Encode()
		if err != nil {
			t.Fatal(err)
		}

		ps, err := configpatch.Parse([]byte(p))
		if err != nil {
			t.Fatal(err)
		}

		if data, err = configpatch.Apply(data, ps...); err != nil {
			t.Fatal(err)
		}

		c, _, err := configs.Load(data, configs.ModeContainer)
		if err != nil {
			t.Fatalf("%v\n%s", err, data)
		}

		return c
	}

	cp := patch(t, out.ControlPlane, `
cluster:
  allowSchedulingOnControlPlanes: true
  apiServer:
    extraArgs: {event-ttl: 2h0m0s}
    env: {HTTP_PROXY: "http://proxy:3128"}
  controllerManager:
    extraArgs: {v: "2"}
  proxy:
    mode: ipvs
  coreDNS:
    disabled: true
  network:
    cni:
      name: custom
      urls: [https://example.com/cilium.yaml]
  extraManifests: [https://example.com/extra.yaml]
  inlineManifests:
    - name: ns
      contents: "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n"
  controlPlane:
    localAPIServerPort: 7443
machine:
  nodeLabels: {zone: a}
  nodeTaints: {dedicated: "gpu:NoSchedule"}
  kubelet:
    extraArgs: {v: "3"}
    nodeIP: {validSubnets: [10.5.0.0/24]}
  pods:
    - apiVersion: v1
      kind: Pod
      metadata: {name: web}
      spec: {containers: [{name: web, image: nginx}]}
`)

	got, err := generate.ToKubernetesDocuments(cp)
	if err != nil {
		t.Fatal(err)
	}

	if _, _, err := configs.Load(mustEncode(t, got), configs.ModeContainer); err != nil {
		t.Fatalf("converted: %v", err)
	}

	a, b := cp.Cluster, got.Cluster

	switch {
	case b.APIServer.ExtraArgs["event-ttl"].String() != "2h0m0s" || b.APIServer.Env["HTTP_PROXY"] == "" || got.LocalAPIServerPort() != 7443:
		t.Errorf("API server %+v port %d", b.APIServer, got.LocalAPIServerPort())
	case b.ControllerManager.ExtraArgs["v"].String() != "2" || b.Proxy.Mode != "ipvs" || !b.CoreDNS.Disabled:
		t.Error("controller-manager, kube-proxy or CoreDNS settings lost")
	case !b.AllowSchedulingOnControlPlanes || got.Machine.NodeTaints["dedicated"] != "gpu:NoSchedule" || got.Machine.NodeLabels["zone"] != "a":
		t.Errorf("labels %v taints %v", got.Machine.NodeLabels, got.Machine.NodeTaints)
	case got.Machine.Kubelet.ExtraArgs["v"].String() != "3" || got.Machine.Kubelet.NodeIP.ValidSubnets[0] != "10.5.0.0/24":
		t.Errorf("kubelet %+v", got.Machine.Kubelet)
	case len(got.Machine.Pods) != 1 || len(b.InlineManifests) != len(a.InlineManifests):
		t.Error("static pods or inline manifests lost")
	case b.Network.CNI.Name != "none":
		t.Errorf("cni %+v", b.Network.CNI)
	}

	var urls []string
	for _, m := range configs.ExternalManifests(got) {
		urls = append(urls, m.URL)
	}

	if !slices.Equal(urls, []string{"https://example.com/cilium.yaml", "https://example.com/extra.yaml"}) {
		t.Errorf("manifests %v", urls)
	}

	if _, err := generate.ToKubernetesDocuments(got); err == nil || !strings.Contains(err.Error(), "already has Kubernetes documents") {
		t.Errorf("converting twice: %v", err)
	}

	refused := patch(t, out.ControlPlane, "cluster:\n  apiServer:\n    extraVolumes: [{hostPath: /var/x, mountPath: /var/x}]\n")
	if _, err := generate.ToKubernetesDocuments(refused); err == nil || err.Error() != "no Kubernetes document says cluster.apiServer.extraVolumes: the config keeps its v1alpha1 shape" {
		t.Errorf("extraVolumes: %v", err)
	}
}

func mustEncode(t *testing.T, cfg *configs.Config) []byte {
	t.Helper()

	data, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	return data
}
