//go:build ignore

// What talosbox's config validation needs to know of this build, dumped
// from the build itself (component "kube-config-schema"; internal/imagebuild
// runs it, configs/kubeschema and configs/kubeflags read the output): the
// schemas of the component configuration files a machine config carries,
// from the components' own Go types, so machine.kubelet.extraConfig and
// cluster.scheduler.config are checked as this kubelet and kube-scheduler
// decode them; the feature gates the components know; and the flags their
// --help hides (deprecated ones, which they still accept).
package main

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"

	"github.com/spf13/pflag"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	scheduler "k8s.io/kube-scheduler/config/v1"
	credentials "k8s.io/kubelet/config/v1"
	kubelet "k8s.io/kubelet/config/v1beta1"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	apiserveroptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// dump is what kube-config-schema prints. Run with "flags:COMPONENT" as its
// argument, it prints that component's hidden flags instead (name: type):
// one component per process, as components' commands change the
// process-wide feature gate when they are built. (A bare component name
// would make main run the component.)
type dump struct {
	Kinds        map[string]*schemaType `json:"kinds"`
	FeatureGates map[string]gate        `json:"featureGates"`
	// AdmissionPlugins are the plugins kube-apiserver can enable.
	AdmissionPlugins []string `json:"admissionPlugins"`
	// Controllers are kube-controller-manager's, from its own descriptors
	// (what its --controllers accepts).
	Controllers controllers `json:"controllers"`
	// SchedulerPlugins are kube-scheduler's in-tree plugins, each with
	// the extension points its framework accepts it at.
	SchedulerPlugins map[string][]string `json:"schedulerPlugins"`
	// KubeletPolicies are the names each of the kubelet's resource
	// managers knows, by its config field.
	KubeletPolicies map[string][]string `json:"kubeletPolicies"`
}

type controllers struct {
	Known             []string          `json:"known"`
	DisabledByDefault []string          `json:"disabledByDefault"`
	Aliases           map[string]string `json:"aliases,omitempty"`
}

type gate struct {
	Default       bool `json:"default"`
	LockToDefault bool `json:"lockToDefault,omitempty"`
}

// schemaType is configs/kubeschema's Type, written out.
type schemaType struct {
	Kind   string                 `json:"kind"`
	Bits   int                    `json:"bits,omitempty"`
	Fields map[string]*schemaType `json:"fields,omitempty"`
	Elem   *schemaType            `json:"elem,omitempty"`
}

var unmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// special are the types whose JSON form is not their Go shape.
var special = map[string]string{
	"k8s.io/apimachinery/pkg/apis/meta/v1.Duration":   "duration",
	"k8s.io/apimachinery/pkg/apis/meta/v1.Time":       "time",
	"k8s.io/apimachinery/pkg/apis/meta/v1.MicroTime":  "time",
	"k8s.io/apimachinery/pkg/api/resource.Quantity":   "quantity",
	"k8s.io/apimachinery/pkg/util/intstr.IntOrString": "intOrString",
	"k8s.io/apimachinery/pkg/runtime.RawExtension":    "any",
}

func dumpSchemas() {
	var out any

	if len(os.Args) > 1 {
		component, ok := strings.CutPrefix(os.Args[1], "flags:")
		if !ok {
			os.Stderr.WriteString("usage: kube-config-schema [flags:COMPONENT]\n")
			os.Exit(2)
		}

		out = hiddenFlags(component)
	} else {
		d := dump{
			Kinds: map[string]*schemaType{
				"KubeletConfiguration":       schemaOf(reflect.TypeOf(kubelet.KubeletConfiguration{}), map[reflect.Type]bool{}),
				"KubeSchedulerConfiguration": schemaOf(reflect.TypeOf(scheduler.KubeSchedulerConfiguration{}), map[reflect.Type]bool{}),
				"CredentialProviderConfig":   schemaOf(reflect.TypeOf(credentials.CredentialProviderConfig{}), map[reflect.Type]bool{}),
			},
			FeatureGates:     map[string]gate{},
			AdmissionPlugins: apiserveroptions.AllOrderedPlugins,
			Controllers: controllers{
				Known:             controllermanager.KnownControllers(),
				DisabledByDefault: controllermanager.ControllersDisabledByDefault(),
				Aliases:           controllermanager.ControllerAliases(),
			},
			SchedulerPlugins: schedulerPlugins(),
			KubeletPolicies:  kubeletPolicies(),
		}

		// Every component of this binary registers its gates with the one
		// default gate, as each upstream binary does with its own.
		for name, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
			d.FeatureGates[string(name)] = gate{Default: spec.Default, LockToDefault: spec.LockToDefault}
		}

		out = d
	}

	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(1)
	}
}

// hiddenFlags are the flags of a component that its --help leaves out.
func hiddenFlags(component string) map[string]string {
	newCmd, ok := components[component]
	if !ok {
		os.Stderr.WriteString("unknown component " + component + "\n")
		os.Exit(2)
	}

	hidden := map[string]string{}

	cmd := newCmd()
	for _, fs := range []*pflag.FlagSet{cmd.Flags(), cmd.PersistentFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Hidden {
				hidden[f.Name] = f.Value.Type()
			}
		})
	}

	return hidden
}

func schemaOf(t reflect.Type, visiting map[reflect.Type]bool) *schemaType {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}

	if k, ok := special[t.PkgPath()+"."+t.Name()]; ok {
		return &schemaType{Kind: k}
	}

	// A type that decodes itself has a JSON form only its code knows.
	if t.Kind() != reflect.Interface && reflect.PointerTo(t).Implements(unmarshaler) {
		return &schemaType{Kind: "any"}
	}

	switch t.Kind() {
	case reflect.Bool:
		return &schemaType{Kind: "bool"}
	case reflect.String:
		return &schemaType{Kind: "string"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &schemaType{Kind: "int", Bits: t.Bits()}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schemaType{Kind: "uint", Bits: t.Bits()}
	case reflect.Float32, reflect.Float64:
		return &schemaType{Kind: "float", Bits: t.Bits()}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return &schemaType{Kind: "bytes"}
		}

		return &schemaType{Kind: "list", Elem: schemaOf(t.Elem(), visiting)}
	case reflect.Map:
		return &schemaType{Kind: "map", Elem: schemaOf(t.Elem(), visiting)}
	case reflect.Struct:
		if visiting[t] {
			return &schemaType{Kind: "any"} // recursive: not worth following
		}

		visiting[t] = true
		defer delete(visiting, t)

		s := &schemaType{Kind: "struct", Fields: map[string]*schemaType{}}
		addFields(s, t, visiting)

		return s
	default:
		return &schemaType{Kind: "any"}
	}
}

// addFields adds a struct's JSON fields, inlining embedded structs as
// encoding/json does.
func addFields(s *schemaType, t reflect.Type, visiting map[reflect.Type]bool) {
	for i := range t.NumField() {
		f := t.Field(i)

		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}

		if !f.IsExported() && !f.Anonymous {
			continue
		}

		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}

		if f.Anonymous && name == "" && ft.Kind() == reflect.Struct {
			addFields(s, ft, visiting)

			continue
		}

		if name == "" {
			name = f.Name
		}

		s.Fields[name] = schemaOf(f.Type, visiting)
	}
}
