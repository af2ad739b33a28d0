package imagebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/talosbox/talosbox/configs/kubeflags"
	"github.com/talosbox/talosbox/configs/kubeschema"
)

// kubeDump is what the Kubernetes binary says of itself as
// "kube-config-schema" (images/kubernetes/schema.go): its config types,
// its feature gates, and the flags each component's --help hides.
type kubeDump struct {
	Kinds        map[string]*kubeschema.Type `json:"kinds"`
	FeatureGates map[string]kubeschema.Gate  `json:"featureGates"`
	// AdmissionPlugins are the plugins kube-apiserver can enable.
	AdmissionPlugins []string                     `json:"admissionPlugins"`
	Controllers      kubeschema.Controllers       `json:"controllers"`
	SchedulerPlugins map[string][]string          `json:"schedulerPlugins"`
	KubeletPolicies  map[string][]string          `json:"kubeletPolicies"`
	HiddenFlags      map[string]map[string]string `json:"-"`
}

// dumpKube runs the Kubernetes binary bin as kube-config-schema: once for
// its types and gates, then once per component for its hidden flags.
func dumpKube(ctx context.Context, version, bin string) (*kubeDump, error) {
	var d kubeDump

	if err := runKubeDump(ctx, version, bin, "", &d); err != nil {
		return nil, err
	}

	if len(d.Kinds) == 0 || len(d.FeatureGates) == 0 || len(d.AdmissionPlugins) == 0 || len(d.Controllers.Known) == 0 ||
		len(d.SchedulerPlugins) == 0 || len(d.KubeletPolicies) == 0 {
		return nil, fmt.Errorf("kube-config-schema %s: no config types, feature gates, admission plugins, controllers, scheduler plugins or kubelet policies in its output", version)
	}

	d.HiddenFlags = map[string]map[string]string{}

	for _, c := range kubeflags.Components {
		hidden := map[string]string{}
		if err := runKubeDump(ctx, version, bin, c, &hidden); err != nil {
			return nil, err
		}

		d.HiddenFlags[c] = hidden
	}

	return &d, nil
}

func runKubeDump(ctx context.Context, version, bin, component string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, helpTimeout)
	defer cancel()

	var stdout, stderr bytes.Buffer

	cmd := exec.CommandContext(ctx, bin)
	cmd.Args[0] = "kube-config-schema"
	if component != "" {
		cmd.Args = append(cmd.Args, "flags:"+component)
	}

	cmd.Env = []string{}
	cmd.Dir = os.TempDir()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr

	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kube-config-schema %s %s: %w\n%s", version, component, err, tail(stderr.Bytes(), 20))
	}

	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("kube-config-schema %s %s: its output: %w", version, component, err)
	}

	return nil
}

// writeKubeSchemas records the shapes of the component configs (the
// kubelet's, the scheduler's) and the feature gates of the Kubernetes
// binary, from its own Go types and gate registry, in
// dir/v<version>.json for configs/kubeschema. Like the flag lists, they
// come from the binary the node runs and are rewritten only on change.
func (b *builder) writeKubeSchemas(version string, d *kubeDump, dir string) error {
	data, err := json.MarshalIndent(kubeschema.File{
		Version: version, Kinds: d.Kinds, FeatureGates: d.FeatureGates, AdmissionPlugins: d.AdmissionPlugins,
		Controllers: d.Controllers, SchedulerPlugins: d.SchedulerPlugins, KubeletPolicies: d.KubeletPolicies,
	}, "", " ")
	if err != nil {
		return err
	}

	data = append(data, '\n')

	// What the package will embed must read back.
	if _, err := kubeschema.Decode(data); err != nil {
		return fmt.Errorf("kubeschema %s: %w", version, err)
	}

	path := filepath.Join(dir, "v"+version+".json")

	changed, err := writeAtomic(path, data)
	if err != nil {
		return fmt.Errorf("kubeschema %s: %w", version, err)
	}

	state := "up to date"
	if changed {
		state = "written"
	}

	b.logf("kubeschema %s: %s %s", version, path, state)

	return nil
}
