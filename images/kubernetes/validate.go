//go:build ignore

// kube-config-validate (main.go dispatches to it) runs this release's own
// checks of the component configuration a machine config feeds: what the
// kubelet, kube-scheduler and kube-controller-manager of this version
// refuse at start, in their own words (configs/kubevalidate runs it). It
// reads one JSON request on standard input and writes one JSON answer; it
// opens no connection and reads nothing of the host beyond what the
// components' validation functions themselves read.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/featuregate"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/version"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletscheme "k8s.io/kubernetes/pkg/kubelet/apis/config/scheme"
	kubeletvalidation "k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedvalidation "k8s.io/kubernetes/pkg/scheduler/apis/config/validation"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// request is what configs/kubevalidate sends.
type request struct {
	// Kubelet is the KubeletConfiguration the node writes (JSON), with
	// the top-level fields the machine config set, to attribute problems.
	Kubelet *struct {
		Config json.RawMessage `json:"config"`
		Fields []string        `json:"fields"`
	} `json:"kubelet,omitempty"`
	// Scheduler is the KubeSchedulerConfiguration the node writes (JSON)
	// and the gates of the scheduler's --feature-gates.
	Scheduler *struct {
		Config       json.RawMessage `json:"config"`
		FeatureGates string          `json:"featureGates,omitempty"`
	} `json:"scheduler,omitempty"`
	// ControllerManager is its command line, flags without the program.
	ControllerManager *struct {
		Args []string `json:"args"`
	} `json:"controllerManager,omitempty"`
}

// problem is one thing a component refuses. Field is where: a top-level
// field of the kubelet's config, a field path of the scheduler's, a flag
// of the controller-manager's; "" when the component does not say.
type problem struct {
	Field string `json:"field,omitempty"`
	Msg   string `json:"msg"`
}

type answer struct {
	Version           string    `json:"version"`
	Kubelet           []problem `json:"kubelet,omitempty"`
	Scheduler         []problem `json:"scheduler,omitempty"`
	ControllerManager []problem `json:"controllerManager,omitempty"`
}

func validateConfigs() {
	// The components' code logs as it works; the answer is the JSON.
	klog.SetOutput(discard{})
	klog.LogToStderr(false)

	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fail("reading the request: %v", err)
	}

	ans := answer{Version: strings.TrimPrefix(version.Get().GitVersion, "v")}
	// The kubelet's gates are its own copy: the scheduler's below set the
	// process-wide gate, as the scheduler's flags do.
	pristine := utilfeature.DefaultMutableFeatureGate.DeepCopy()

	if k := req.Kubelet; k != nil {
		ans.Kubelet = kubeletProblems(k.Config, k.Fields, pristine)
	}

	if s := req.Scheduler; s != nil {
		ans.Scheduler = schedulerProblems(s.Config, s.FeatureGates)
	}

	if c := req.ControllerManager; c != nil {
		ans.ControllerManager = controllerManagerProblems(c.Args)
	}

	if err := json.NewEncoder(os.Stdout).Encode(ans); err != nil {
		fail("writing the answer: %v", err)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kube-config-validate: "+format+"\n", args...)
	os.Exit(1)
}

// kubeletProblems loads config as the kubelet loads its --config file and
// runs what the kubelet checks before it starts anything, then finds which
// of fields each refusal comes from: the refusal that goes away when the
// field is left out is that field's.
func kubeletProblems(config json.RawMessage, fields []string, gates featuregate.MutableVersionedFeatureGate) []problem {
	all := kubeletChecks(config, gates)
	if len(all) == 0 {
		return nil
	}

	var doc map[string]json.RawMessage
	if err := json.Unmarshal(config, &doc); err != nil {
		return []problem{{Msg: err.Error()}}
	}

	owners := map[string][]string{}

	for _, f := range fields {
		if _, ok := doc[f]; !ok {
			continue
		}

		without := make(map[string]json.RawMessage, len(doc))
		for k, v := range doc {
			if k != f {
				without[k] = v
			}
		}

		data, err := json.Marshal(without)
		if err != nil {
			continue
		}

		left := kubeletChecks(data, gates)
		for _, msg := range all {
			if !slices.Contains(left, msg) {
				owners[msg] = append(owners[msg], f)
			}
		}
	}

	out := make([]problem, 0, len(all))
	for _, msg := range all {
		out = append(out, problem{Field: pick(owners[msg], msg), Msg: msg})
	}

	return out
}

// pick names the field a refusal is about: the only one whose absence
// clears it, or among several the first the message names.
func pick(owners []string, msg string) string {
	if len(owners) == 1 {
		return owners[0]
	}

	best, at := "", len(msg)+1

	for _, f := range owners {
		if loc := regexp.MustCompile(`\b` + regexp.QuoteMeta(f) + `\b`).FindStringIndex(msg); loc != nil && loc[0] < at {
			best, at = f, loc[0]
		}
	}

	return best
}

// kubeletChecks is the kubelet's start up to its container manager:
// decoding (strict, then lenient as the kubelet falls back), the feature
// gates, logging, ValidateKubeletConfiguration, the eviction thresholds,
// and the CPU and memory managers' policies.
func kubeletChecks(config []byte, pristine featuregate.MutableVersionedFeatureGate) []string {
	_, codecs, err := kubeletscheme.NewSchemeAndCodecs()
	if err != nil {
		return []string{err.Error()}
	}

	kc, err := decodeKubeletConfiguration(codecs, config)
	if err != nil {
		return []string{err.Error()}
	}

	// What the kubelet's loadConfigFile does after decoding.
	if kc.EvictionHard == nil {
		kc.EvictionHard = eviction.DefaultEvictionHard
	} else if kc.MergeDefaultEvictionSettings {
		for k, v := range eviction.DefaultEvictionHard {
			if _, ok := kc.EvictionHard[k]; !ok {
				kc.EvictionHard[k] = v
			}
		}
	}

	gates := pristine.DeepCopy()
	if err := gates.SetFromMap(kc.FeatureGates); err != nil {
		return []string{fmt.Sprintf("failed to set feature gates from initial flags-based config: %v", err)}
	}

	var out []string

	keep := func(msg string) {
		// The kubelet's Linux checks of the host's cgroup version read
		// the machine this runs on, which is not the node.
		if !strings.Contains(msg, "cgroup v1") {
			out = append(out, msg)
		}
	}

	add := func(err error) {
		if err == nil {
			return
		}

		var agg utilerrors.Aggregate
		if errors.As(err, &agg) {
			for _, e := range agg.Errors() {
				keep(e.Error())
			}

			return
		}

		keep(err.Error())
	}

	if errs := logsapi.Validate(&kc.Logging, gates, field.NewPath("logging")); len(errs) > 0 {
		add(fmt.Errorf("initialize logging: %w", errs.ToAggregate()))
	}

	add(kubeletvalidation.ValidateKubeletConfiguration(kc, gates))

	if _, err := eviction.ParseThresholdConfig(kc.EnforceNodeAllocatable, kc.EvictionHard, kc.EvictionSoft, kc.EvictionSoftGracePeriod, kc.EvictionMinimumReclaim); err != nil {
		add(fmt.Errorf("failed to parse eviction thresholds: %w", err))
	}

	add(cpuManagerPolicy(kc))
	add(memoryManagerPolicy(kc))

	return out
}

// cpuManagerPolicy is the CPU manager's choice of policy
// (cpumanager.NewManager): an unknown name, or options the policy refuses.
// The static policy's checks against the machine's CPUs are the node's,
// not the config's.
func cpuManagerPolicy(kc *kubeletconfig.KubeletConfiguration) error {
	switch kc.CPUManagerPolicy {
	case string(cpumanager.PolicyNone):
		if _, err := cpumanager.NewNonePolicy(kc.CPUManagerPolicyOptions); err != nil {
			return fmt.Errorf("new none policy error: %w", err)
		}
	case string(cpumanager.PolicyStatic):
		if _, err := cpumanager.NewStaticPolicyOptions(kc.CPUManagerPolicyOptions); err != nil {
			return fmt.Errorf("new static policy error: %w", err)
		}
	default:
		return newCPUManager(kc)
	}

	return nil
}

// memoryManagerPolicy: memorymanager.NewManager refuses a policy it does
// not know before it looks at the machine; with a policy it knows it would
// read the machine's memory, which is the node's business.
func memoryManagerPolicy(kc *kubeletconfig.KubeletConfiguration) error {
	if slices.Contains(memoryManagerPolicies, kc.MemoryManagerPolicy) {
		return nil
	}

	return newMemoryManager(kc)
}

// schedulerProblems loads config as kube-scheduler loads its --config
// file, validates it, and builds the scheduler from it as the scheduler's
// Setup does (every profile's framework with the in-tree plugins and their
// arguments), with a client that is never started.
func schedulerProblems(config json.RawMessage, gates string) []problem {
	if gates != "" {
		fg := map[string]bool{}
		if err := cliflag.NewMapStringBool(&fg).Set(gates); err != nil {
			return []problem{{Field: "--feature-gates", Msg: err.Error()}}
		}

		if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(fg); err != nil {
			return []problem{{Field: "--feature-gates", Msg: err.Error()}}
		}
	}

	obj, gvk, err := schedscheme.Codecs.UniversalDecoder().Decode(config, nil, nil)
	if err != nil {
		return []problem{{Msg: err.Error()}}
	}

	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return []problem{{Msg: fmt.Sprintf("couldn't decode as KubeSchedulerConfiguration, got %s", gvk)}}
	}

	cfg.TypeMeta.APIVersion = gvk.GroupVersion().String()

	if err := schedvalidation.ValidateKubeSchedulerConfiguration(cfg); err != nil {
		return fieldProblems(err)
	}

	client, err := clientset.NewForConfig(unstarted())
	if err != nil {
		return []problem{{Msg: err.Error()}}
	}

	dyn, err := dynamic.NewForConfig(unstarted())
	if err != nil {
		return []problem{{Msg: err.Error()}}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})

	_, err = scheduler.New(ctx, client,
		informers.NewSharedInformerFactory(client, 0),
		dynamicinformer.NewDynamicSharedInformerFactory(dyn, 0),
		profile.NewRecorderFactory(broadcaster),
		scheduler.WithComponentConfigVersion(cfg.TypeMeta.APIVersion),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithParallelism(cfg.Parallelism),
	)
	if err != nil {
		return []problem{{Field: pluginConfigOf(err.Error(), cfg), Msg: err.Error()}}
	}

	return nil
}

// pluginInit is how the scheduler says a plugin refused its arguments.
var pluginInit = regexp.MustCompile(`creating profile for scheduler name (\S+): initializing plugin "([^"]+)"`)

// pluginConfigOf is the field path of the arguments a plugin refused
// (profiles[i].pluginConfig[j].args), "" when the message names none.
func pluginConfigOf(msg string, cfg *schedconfig.KubeSchedulerConfiguration) string {
	m := pluginInit.FindStringSubmatch(msg)
	if m == nil {
		return ""
	}

	for i, p := range cfg.Profiles {
		if p.SchedulerName != m[1] {
			continue
		}

		for j, pc := range p.PluginConfig {
			if pc.Name == m[2] {
				return fmt.Sprintf("profiles[%d].pluginConfig[%d].args", i, j)
			}
		}
	}

	return ""
}

// unstarted is a client configuration no request is ever made with.
func unstarted() *rest.Config { return &rest.Config{Host: "https://127.0.0.1:1"} }

// fieldProblems splits the scheduler's aggregate of field errors, each
// with its field path.
func fieldProblems(err error) []problem {
	var errs []error

	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}

	out := make([]problem, 0, len(errs))

	for _, e := range errs {
		var fe *field.Error
		if errors.As(e, &fe) {
			out = append(out, problem{Field: fe.Field, Msg: fe.Error()})

			continue
		}

		out = append(out, problem{Msg: e.Error()})
	}

	return out
}
