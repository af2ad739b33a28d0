package render

import (
	"bytes"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/configs/manifestcheck"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/manifests/templates"
	k8srender "github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// kubernetes renders what the node's Kubernetes controllers render, under
// the same conditions: the kubelet on every node with a cluster section,
// the control plane and the bootstrap manifests on control planes.
func (b *builder) kubernetes() {
	if b.cfg.Cluster == nil {
		b.note("no cluster section: the node runs no kubelet and no control plane")

		return
	}

	if _, err := k8srender.ClusterFrom(b.cfg); err != nil {
		b.failErr("cluster", err)

		return
	}

	b.kubelet()

	if b.cfg.IsControlPlane() {
		b.controlPlane()
		b.manifests()
	}

	b.kubeValidate()
}

func (b *builder) controlPlane() {
	specs, err := k8srender.ComponentConfigs(b.cfg)
	if err != nil {
		b.failErr("cluster", err)

		return
	}

	files, err := k8srender.ConfigFiles(b.cfg)
	if err != nil {
		b.failErr("cluster", err)

		return
	}

	for _, f := range files {
		b.add(Artifact{Path: "fs" + f.Path, NodePath: f.Path, Mode: 0o400, Data: f.Data})
	}

	v := k8srender.PodVersions{Secrets: SecretsVersion, Config: ConfigVersion, ConfigFile: k8srender.FilesVersion(files)}

	for _, id := range []string{k8s.APIServerID, k8s.ControllerManagerID, k8s.SchedulerID} {
		spec := specs[id]
		if !spec.Enabled {
			b.note("%s is disabled (machine.controlPlane): the node renders no pod for it", id)

			continue
		}

		pod, err := k8srender.StaticPodFor(id, spec, v)
		if err != nil {
			b.failErr("cluster", err)

			continue
		}

		if b.check {
			continue
		}

		data, err := yaml.Marshal(pod)
		if err != nil {
			b.fail("cluster", "%s static pod: %v", id, err)

			continue
		}

		b.add(Artifact{Path: "static-pods/" + id + ".yaml", NodePath: "served to the kubelet at its staticPodURL", Data: data})
	}
}

func (b *builder) kubelet() {
	cl, _ := k8srender.ClusterFrom(b.cfg)

	var valid []string
	if k := b.cfg.Machine.Kubelet; k != nil && k.NodeIP != nil {
		valid = k.NodeIP.ValidSubnets
	}

	picked, _, err := k8srender.PickNodeIPs(k8srender.NodeIPConfigFor(valid, cl), b.node.ips)
	if err != nil {
		b.failErr("machine.kubelet.nodeIP.validSubnets", err)

		return
	}

	if len(picked) == 0 {
		b.note("no --node-ip address is a node IP by machine.kubelet.nodeIP and the pod and service subnets: a node with only these would start no kubelet")
	}

	ips := make([]string, len(picked))
	for i, a := range picked {
		ips[i] = a.String()
	}

	if k := b.cfg.Machine.Kubelet; k != nil && k.RegisterWithFQDN {
		b.note("machine.kubelet.registerWithFQDN: the node registers with its FQDN; the node name rendered is the hostname")
	}

	spec, err := k8srender.KubeletSpecFor(b.cfg, k8srender.KubeletInputs{
		Nodename: strings.ToLower(b.node.hostname), NodeIPs: ips, StaticPodURL: StaticPodURL,
		InContainer: b.opts.Mode == configs.ModeContainer,
	})
	if err != nil {
		b.failErr("machine.kubelet", err)

		return
	}

	conf, err := k8srender.KubeletConfigYAML(spec)
	if err != nil {
		b.failErr("machine.kubelet.extraConfig", err)

		return
	}

	server, err := k8srender.KubeletServer(b.cfg)
	if err != nil {
		b.failErr("cluster", err)

		return
	}

	// The node's bootstrap kubeconfig refuses a malformed token.
	if !pki.ValidToken(b.cfg.Cluster.Token) {
		b.fail("cluster.token", "the kubelet's bootstrap kubeconfig needs a bootstrap token <6 of [a-z0-9]>.<16 of [a-z0-9]>")
	}

	b.add(Artifact{Path: "fs" + constants.KubeletConfigPath, NodePath: constants.KubeletConfigPath, Mode: 0o600, Data: conf})
	b.add(Artifact{Path: "fs" + constants.KubeletCAPath, NodePath: constants.KubeletCAPath, Mode: 0o400,
		Data: k8srender.KubeletCABundle(k8srender.KubeletCAs(b.cfg))})
	b.add(Artifact{Path: "services/kubelet.args", NodePath: "the kubelet's command line", Data: argsFile("/usr/local/bin/kubelet", spec.Args)})

	if b.check {
		return
	}

	svc, err := yaml.Marshal(struct {
		Image            string      `yaml:"image"`
		ExpectedNodename string      `yaml:"expectedNodename,omitempty"`
		BootstrapServer  string      `yaml:"bootstrapKubeconfigServer"`
		ExtraMounts      []k8s.Mount `yaml:"extraMounts,omitempty"`
	}{spec.Image, spec.ExpectedNodename, server, spec.ExtraMounts})
	if err != nil {
		b.fail("machine.kubelet", "kubelet service: %v", err)

		return
	}

	b.add(Artifact{Path: "services/kubelet.yaml", NodePath: "the kubelet's container (system namespace)", Data: svc})
}

// manifests renders the bootstrap manifests, the inline ones and the list
// of those a node would download.
func (b *builder) manifests() {
	o, err := k8srender.ManifestOptions(b.cfg)
	if err != nil {
		b.failErr("cluster", err)

		return
	}

	texts, err := templates.Render(o)
	if err != nil {
		b.failErr("cluster", err)
	}

	for _, t := range texts {
		// The node parses what the templates wrote; a config value that
		// broke their YAML would stop it there.
		if err := manifestcheck.Check(t.YAML); err != nil {
			b.fail("cluster", "bootstrap manifest template %s: %v", t.ID, err)

			continue
		}

		b.add(Artifact{Path: "manifests/" + t.ID + ".yaml", NodePath: "applied to the cluster", Data: t.YAML})
	}

	cl := b.cfg.Cluster

	for i, im := range cl.InlineManifests {
		p := fmt.Sprintf("cluster.inlineManifests[%d]", i)

		if im.Name == "" {
			b.fail(p+".name", "a manifest has no name")

			continue
		}

		if err := manifestcheck.Check([]byte(im.Contents)); err != nil {
			b.fail(p+".contents", "%q: %v", im.Name, err)

			continue
		}

		b.add(Artifact{Path: "manifests/99-" + fileName(im.Name) + ".yaml", NodePath: "applied to the cluster", Data: []byte(im.Contents)})
	}

	b.extraManifests()
}

// extraManifests lists what a node downloads: the custom CNI's URLs and
// cluster.extraManifests, with the headers' names (their values may be
// credentials).
func (b *builder) extraManifests() {
	cl := b.cfg.Cluster

	type entry struct {
		ID  string `yaml:"id"`
		URL string `yaml:"url"`
	}

	var list struct {
		Note    string   `yaml:"note"`
		Entries []entry  `yaml:"manifests"`
		Headers []string `yaml:"headers,omitempty"`
	}

	if n := cl.Network; n != nil && n.CNI != nil && n.CNI.Name == "custom" {
		for _, u := range n.CNI.URLs {
			list.Entries = append(list.Entries, entry{"05-" + u, u})
		}
	}

	headers := map[string]bool{}

	for k := range cl.ExtraManifestHeaders {
		headers[k] = true
	}

	// cluster.extraManifests and the KubeExternalManifestConfig documents.
	for _, e := range configs.ExternalManifests(b.cfg) {
		list.Entries = append(list.Entries, entry{e.ID, e.URL})

		for k := range e.Headers {
			headers[k] = true
		}
	}

	if len(list.Entries) == 0 || b.check {
		return
	}

	list.Headers = slices.Sorted(maps.Keys(headers))

	list.Note = "downloaded by the node (cluster.extraManifests, KubeExternalManifestConfig documents, the custom CNI's URLs), not by the render; headers are sent with each download"

	data, err := yaml.Marshal(list)
	if err != nil {
		b.fail("cluster.extraManifests", "%v", err)

		return
	}

	b.add(Artifact{Path: "manifests/extra-manifests.yaml", NodePath: "downloaded and applied to the cluster", Data: data})
}

// argsFile is a command line, one argument a line.
func argsFile(cmd string, args []string) []byte {
	var buf bytes.Buffer

	buf.WriteString(cmd + "\n")

	for _, a := range args {
		buf.WriteString(a + "\n")
	}

	return buf.Bytes()
}

// fileName makes a config-given name one path element.
func fileName(s string) string {
	out := []byte(s)

	for i, c := range out {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			out[i] = '_'
		}
	}

	if s := path.Clean(string(out)); s != "." && s != ".." {
		return s
	}

	return "_"
}
