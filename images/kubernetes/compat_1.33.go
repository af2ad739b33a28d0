//go:build ignore

// What main.go needs as Kubernetes 1.33 spells it (internal/imagebuild
// copies this file as compat.go for that minor).
package main

import (
	"github.com/spf13/cobra"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
)

// newKubeletCommand: 1.33's takes no context.
func newKubeletCommand() *cobra.Command { return kubelet.NewKubeletCommand() }

// setKubectlVerbosity: 1.33's kubectl reads -v in its flag parsing only.
func setKubectlVerbosity([]string) {}
