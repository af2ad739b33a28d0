//go:build ignore

// Command kubernetes is every Kubernetes component in one binary, as
// hyperkube was: it dispatches on argv[0] (or its first argument) to the
// same cobra commands the upstream cmd/* mains run, so the shared packages
// are compiled and shipped once. internal/imagebuild copies this file, and
// compat_<minor>.go for the API that differs between minors, into a
// generated module that requires k8s.io/kubernetes at the pinned version;
// the build tag keeps them out of talosbox's own module.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	_ "time/tzdata" // CronJob time zones (kube-apiserver, kube-controller-manager)

	"github.com/spf13/cobra"
	_ "k8s.io/client-go/plugin/pkg/client/auth" // kubectl's client auth plugins
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the version metric
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var components = map[string]func() *cobra.Command{
	"kube-apiserver":          apiserver.NewAPIServerCommand,
	"kube-controller-manager": controllermanager.NewControllerManagerCommand,
	"kube-scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"kube-proxy":              proxy.NewProxyCommand,
	"kubelet":                 newKubeletCommand,
}

func main() {
	name := filepath.Base(os.Args[0])
	if !known(name) && len(os.Args) > 1 && known(os.Args[1]) {
		name, os.Args = os.Args[1], os.Args[1:]
	}

	switch {
	case name == "kubectl":
		runKubectl()
	case name == "kube-config-validate":
		// Not a component: this build's own checks of component
		// configs, for talosbox's validation (validate.go).
		validateConfigs()
	case name == "kube-config-schema":
		// Not a component: the build's config types, for talosbox's
		// validation (schema.go).
		dumpSchemas()
	case known(name):
		os.Exit(cli.Run(components[name]()))
	default:
		names := append(slices.Sorted(func(yield func(string) bool) {
			for n := range components {
				if !yield(n) {
					return
				}
			}
		}), "kubectl")
		fmt.Fprintf(os.Stderr, "usage: %s COMPONENT [flags], or run it through a link named COMPONENT\ncomponents: %s\n",
			filepath.Base(os.Args[0]), strings.Join(names, ", "))
		os.Exit(2)
	}
}

func known(name string) bool {
	_, ok := components[name]
	return ok || name == "kubectl"
}

// runKubectl is upstream cmd/kubectl's main: the verbosity is read before
// the command tree is built, so klog is set up while plugins load.
func runKubectl() {
	setKubectlVerbosity(os.Args)
	if err := cli.RunNoErrOutput(kubectl.NewDefaultKubectlCommand()); err != nil {
		kubectlutil.CheckErr(err)
	}
}
