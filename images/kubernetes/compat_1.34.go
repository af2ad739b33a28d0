//go:build ignore

// What main.go needs that changed in Kubernetes 1.34 (internal/imagebuild
// copies this file as compat.go for that minor).
package main

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/component-base/logs"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

func newKubeletCommand() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) }

// setKubectlVerbosity reads -v before the command tree is built, so klog
// is set up while plugins load (upstream cmd/kubectl).
func setKubectlVerbosity(args []string) {
	logs.GlogSetter(kubectl.GetLogVerbosity(args)) //nolint:errcheck
}
