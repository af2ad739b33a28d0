package configs

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/talosbox/talosbox/configs/kubeflags"
	"github.com/talosbox/talosbox/configs/kubeschema"
)

// KubeletProtectedFields are the fields of machine.kubelet.extraConfig
// talosbox sets itself (Talos's pkg/machinery/kubelet list): validation
// refuses them and the kubelet config renderer never takes them from the
// config.
var KubeletProtectedFields = []string{
	"apiVersion", "authentication", "authorization", "cgroupRoot", "kind", "kubeletCgroups", "port",
	"protectKernelDefaults", "resolvConf", "rotateCertificates", "systemCgroups", "staticPodPath", "seccompDefault",
}

// componentConfigs checks the component configuration files the config
// feeds: the kubelet's extraConfig, the scheduler's config, the audit
// policy and the admission plugins' configurations, as the components
// read them at start (a file they refuse keeps them down).
func (v *validator) componentConfigs(c *Config) {
	v.componentNames(c)

	if m := c.Machine; m != nil && m.Kubelet != nil {
		for _, f := range KubeletProtectedFields {
			if _, ok := m.Kubelet.ExtraConfig[f]; ok {
				v.errorf("machine.kubelet.extraConfig."+f, "kubelet configuration field %q can't be overridden: talosbox sets it", f)
			}
		}

		v.checkSchema("machine.kubelet.extraConfig", kubeschema.KubeletConfiguration, m.Kubelet.ExtraConfig)

		v.kubeletResources(m.Kubelet.ExtraConfig)

		if len(m.Kubelet.CredentialProviderConfig) > 0 {
			v.warnf("machine.kubelet.credentialProviderConfig", "has no effect: talosbox nodes carry no image credential provider plugins; use machine.registries.config auth instead")
		}

		if fg, ok := m.Kubelet.ExtraConfig["featureGates"].(map[string]any); ok {
			gates := map[string]bool{}
			for k, val := range fg {
				if b, ok := val.(bool); ok {
					gates[k] = b
				}
			}

			if ver, ok := v.kubeVersions[kubeflags.Kubelet]; ok {
				v.featureGates("machine.kubelet.extraConfig.featureGates", kubeflags.Kubelet, ver, gates)
			}
		}
	}

	cl := c.Cluster
	if cl == nil {
		return
	}

	if a := cl.APIServer; a != nil {
		if len(a.AuditPolicy) > 0 {
			v.auditPolicy("cluster.apiServer.auditPolicy", a.AuditPolicy)
		}

		for i, plugin := range a.AdmissionControl {
			if plugin.Name == "PodSecurity" {
				v.podSecurity(indexPath("cluster.apiServer.admissionControl", i)+".configuration", plugin.Configuration)
			}
		}

		v.componentResources("apiServer", a.Resources)
	}

	if cm := cl.ControllerManager; cm != nil {
		v.componentResources("controllerManager", cm.Resources)
	}

	if s := cl.Scheduler; s != nil {
		v.componentResources("scheduler", s.Resources)

		if len(s.Config) > 0 {
			v.schedulerConfig("cluster.scheduler.config", s.Config)
		}
	}

	for i, m := range cl.InlineManifests {
		if strings.TrimSpace(m.Contents) == "" {
			continue // warned about with the names
		}

		if err := checkManifest([]byte(m.Contents)); err != nil {
			v.errorf(indexPath("cluster.inlineManifests", i)+".contents", "inline manifest %q: %v", m.Name, err)
		}
	}
}

// schedulerConfig checks the parts of cluster.scheduler.config talosbox
// keeps: the version and kind, which it sets to the one kube-scheduler
// reads (a config written for another version would be read as this one).
func (v *validator) schedulerConfig(p string, cfg Unstructured) {
	const apiVersion, kind = "kubescheduler.config.k8s.io/v1", kubeschema.KubeSchedulerConfiguration

	if av, ok := cfg["apiVersion"]; ok && av != apiVersion {
		v.errorf(p+".apiVersion", "kube-scheduler reads %s only, not %v: write the config for it (or leave apiVersion out)", apiVersion, av)
	}

	if k, ok := cfg["kind"]; ok && k != kind {
		v.errorf(p+".kind", "kind must be %s, not %v", kind, k)
	}

	if cc, ok := cfg["clientConnection"]; ok {
		if _, isMap := cc.(map[string]any); !isMap {
			v.errorf(p+".clientConnection", "must be a mapping, not %v", cc)
		} else if _, ok := cc.(map[string]any)["kubeconfig"]; ok {
			v.errorf(p+".clientConnection.kubeconfig", "can't be overridden: talosbox sets the scheduler's kubeconfig")
		}
	}

	v.checkSchema(p, kind, cfg)
}

// The audit policy's vocabulary (audit.k8s.io/v1).
var (
	auditLevels = []string{"None", "Metadata", "Request", "RequestResponse"}
	auditStages = []string{"RequestReceived", "ResponseStarted", "ResponseComplete", "Panic"}
	auditFields = []string{"apiVersion", "kind", "metadata", "rules", "omitStages", "omitManagedFields"}
	auditRule   = []string{"level", "users", "userGroups", "verbs", "resources", "namespaces", "nonResourceURLs", "omitStages", "omitManagedFields"}
)

// auditPolicy checks cluster.apiServer.auditPolicy as kube-apiserver
// loads it: audit.k8s.io/v1 Policy, at least one rule, each with a known
// level; the API server does not start with a policy it cannot load.
func (v *validator) auditPolicy(p string, pol Unstructured) {
	if av := pol["apiVersion"]; av != "audit.k8s.io/v1" {
		v.errorf(p+".apiVersion", "apiVersion must be audit.k8s.io/v1, not %v (v1beta1 and v1alpha1 were removed in Kubernetes 1.24)", av)
	}

	if k := pol["kind"]; k != "Policy" {
		v.errorf(p+".kind", "kind must be Policy, not %v", k)
	}

	v.knownKeys(p, map[string]any(pol), auditFields)
	v.stages(p+".omitStages", pol["omitStages"])

	rules, ok := pol["rules"].([]any)

	switch {
	case !ok && pol["rules"] != nil:
		v.errorf(p+".rules", "rules must be a list of rules (- level: Metadata ...), not %s: kube-apiserver cannot load the policy", describeYAMLValue(pol["rules"]))

		return
	case len(rules) == 0:
		v.errorf(p+".rules", "an audit policy needs at least one rule: kube-apiserver refuses a policy with none")

		return
	}

	for i, r := range rules {
		rp := indexPath(p+".rules", i)

		rule, ok := r.(map[string]any)
		if !ok {
			v.errorf(rp, "a rule must be a mapping (level: Metadata ...), not %s", describeYAMLValue(r))

			continue
		}

		v.knownKeys(rp, rule, auditRule)

		if res, ok := rule["resources"].([]any); ok {
			for j, gr := range res {
				if m, ok := gr.(map[string]any); ok {
					v.knownKeys(indexPath(rp+".resources", j), m, []string{"group", "resources", "resourceNames"})
				}
			}
		}

		level, _ := rule["level"].(string)
		if !slices.Contains(auditLevels, level) {
			v.errorf(rp+".level", "audit level %q is not one of %s", fmt.Sprint(rule["level"]), strings.Join(auditLevels, ", "))
		}

		v.stages(rp+".omitStages", rule["omitStages"])
	}
}

func (v *validator) stages(p string, s any) {
	if s == nil {
		return
	}

	list, ok := s.([]any)
	if !ok {
		v.errorf(p, "must be a list of stages (%s)", strings.Join(auditStages, ", "))

		return
	}

	for i, st := range list {
		if name, _ := st.(string); !slices.Contains(auditStages, name) {
			v.errorf(indexPath(p, i), "unknown audit stage %v (expected %s)", st, strings.Join(auditStages, ", "))
		}
	}
}

// knownKeys refuses keys a strictly decoded component config does not
// have, suggesting the closest.
func (v *validator) knownKeys(p string, m map[string]any, known []string) {
	for _, k := range sortedKeys(m) {
		if slices.Contains(known, k) {
			continue
		}

		msg := fmt.Sprintf("unknown field %q", k)
		if s := suggest(k, known); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}

		v.errorf(p+"."+k, "%s", msg)
	}
}

var (
	podSecurityLevels  = []string{"privileged", "baseline", "restricted"}
	podSecurityVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(latest|v1\.(0|[1-9][0-9]*))$`) })
	podSecurityAPIs    = []string{
		"pod-security.admission.config.k8s.io/v1", "pod-security.admission.config.k8s.io/v1beta1",
		"pod-security.admission.config.k8s.io/v1alpha1",
	}
)

// podSecurity checks the PodSecurity admission plugin's configuration as
// kube-apiserver reads it at start: known levels and versions, known
// fields.
func (v *validator) podSecurity(p string, cfg Unstructured) {
	if len(cfg) == 0 {
		return
	}

	if av, _ := cfg["apiVersion"].(string); !slices.Contains(podSecurityAPIs, av) {
		v.errorf(p+".apiVersion", "apiVersion must be %s, not %v", podSecurityAPIs[0], cfg["apiVersion"])
	}

	if k := cfg["kind"]; k != "PodSecurityConfiguration" {
		v.errorf(p+".kind", "kind must be PodSecurityConfiguration, not %v", k)
	}

	v.knownKeys(p, map[string]any(cfg), []string{"apiVersion", "kind", "defaults", "exemptions"})

	if d, ok := cfg["defaults"].(map[string]any); ok {
		v.knownKeys(p+".defaults", d, []string{"enforce", "enforce-version", "audit", "audit-version", "warn", "warn-version"})

		for _, mode := range []string{"enforce", "audit", "warn"} {
			if lvl, ok := d[mode]; ok {
				if s, _ := lvl.(string); !slices.Contains(podSecurityLevels, s) {
					v.errorf(p+".defaults."+mode, "invalid Pod Security level %v (expected privileged, baseline or restricted)", lvl)
				}
			}

			if ver, ok := d[mode+"-version"]; ok {
				if s, _ := ver.(string); !podSecurityVersion().MatchString(s) {
					v.errorf(p+".defaults."+mode+"-version", "invalid Pod Security version %v (expected latest or v1.N, such as v1.34)", ver)
				}
			}
		}
	} else if d, ok := cfg["defaults"]; ok {
		v.errorf(p+".defaults", "must be a mapping, not %v", d)
	}

	if e, ok := cfg["exemptions"].(map[string]any); ok {
		v.knownKeys(p+".exemptions", e, []string{"usernames", "runtimeClasses", "namespaces"})

		for _, k := range sortedKeys(e) {
			if l, ok := e[k].([]any); !ok && e[k] != nil {
				v.errorf(p+".exemptions."+k, "must be a list of names")
			} else {
				for i, x := range l {
					if _, ok := x.(string); !ok {
						v.errorf(indexPath(p+".exemptions."+k, i), "must be a name, not %v", x)
					}
				}
			}
		}
	}
}

// checkSchema checks a component config against the types of the
// component version that will read it (configs/kubeschema, dumped from the
// binaries make images builds). A value the component cannot decode keeps
// it down: an error. An unknown field is an error for kube-scheduler, which
// decodes strictly, and a warning for the kubelet, which ignores it.
func (v *validator) checkSchema(p, kind string, cfg Unstructured) {
	if len(cfg) == 0 {
		return
	}

	component := kubeflags.Kubelet
	if kind == kubeschema.KubeSchedulerConfiguration {
		component = kubeflags.Scheduler
	}

	ver, ok := v.kubeVersions[component]
	if !ok {
		return // its image is invalid: reported with it
	}

	schema, from := kubeschema.For(kind, ver.String())
	if schema == nil {
		v.warnf(p, "no %s schema for %s %s in this talosbox build: its fields are not checked", kind, component, ver)

		return
	}

	for _, prob := range schema.Check(map[string]any(cfg)) {
		fp := p + "." + prob.Path

		switch {
		case owned(kind, prob.Path):
			// Reported above with a reason of its own.
		case !prob.Unknown:
			v.errorf(fp, "%s: %s %s would not start with it", prob.Msg, component, from)
		case component == kubeflags.Scheduler:
			v.errorf(fp, "%s%s: %s %s refuses a config with fields it does not know", prob.Msg, hint(prob.Suggest), component, from)
		default:
			v.warnf(fp, "%s%s: %s %s ignores it", prob.Msg, hint(prob.Suggest), component, from)
		}
	}
}

// owned reports the fields talosbox sets itself in a component config,
// which validation refuses by name before the schema is consulted.
func owned(kind, path string) bool {
	if kind == kubeschema.KubeletConfiguration {
		return slices.Contains(KubeletProtectedFields, strings.SplitN(strings.SplitN(path, ".", 2)[0], "[", 2)[0])
	}

	return path == "apiVersion" || path == "kind" || path == "clientConnection.kubeconfig"
}

func hint(s string) string {
	if s == "" {
		return ""
	}

	return fmt.Sprintf(" (did you mean %q?)", s)
}

// evictionSignals are the kubelet's eviction signals.
var evictionSignals = []string{
	"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree",
	"containerfs.available", "containerfs.inodesFree", "pid.available", "allocatableMemory.available",
}

// kubeletResources checks the kubelet config's resource maps, which its
// types leave as strings and the kubelet parses at start (a value it
// cannot parse keeps it down).
func (v *validator) kubeletResources(cfg Unstructured) {
	const p = "machine.kubelet.extraConfig"

	for _, field := range []string{"systemReserved", "kubeReserved"} {
		m, _ := cfg[field].(map[string]any)

		for _, k := range sortedKeys(m) {
			kp := p + "." + field + "[" + strconv.Quote(k) + "]"

			if !slices.Contains([]string{"cpu", "memory", "ephemeral-storage", "pid"}, k) {
				v.errorf(kp, "the kubelet reserves cpu, memory, ephemeral-storage and pid only, not %q", k)

				continue
			}

			if _, s, err := quantityOf(m[k]); err != nil {
				v.errorf(kp, "%v", err)
			} else if q, _ := ParseQuantity(s); q.Sign() < 0 {
				v.errorf(kp, "%s must not be negative", s)
			}
		}
	}

	for _, field := range []string{"evictionHard", "evictionSoft", "evictionMinimumReclaim"} {
		m, _ := cfg[field].(map[string]any)

		for _, k := range sortedKeys(m) {
			kp := p + "." + field + "[" + strconv.Quote(k) + "]"

			if !slices.Contains(evictionSignals, k) {
				v.errorf(kp, "unknown eviction signal %q (expected one of %s)", k, strings.Join(evictionSignals, ", "))

				continue
			}

			s, _ := m[k].(string)
			if pct, ok := strings.CutSuffix(s, "%"); ok {
				if f, err := strconv.ParseFloat(pct, 64); err != nil || f < 0 || f > 100 {
					v.errorf(kp, "invalid percentage %q", s)
				}

				continue
			}

			if _, _, err := quantityOf(m[k]); err != nil {
				v.errorf(kp, "%v (or a percentage such as 10%%)", err)
			}
		}
	}
}

// describeYAMLValue names a free-form value's kind for "not X" messages.
func describeYAMLValue(x any) string {
	switch x := x.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", truncate(x, 40))
	default:
		return fmt.Sprintf("the value %v", x)
	}
}
