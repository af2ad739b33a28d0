//go:build ignore

// What main.go needs that changed in Kubernetes 1.34 (internal/imagebuild
// copies this file as compat.go for that minor).
package main

import (
	"context"
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/component-base/logs"
	kubectl "k8s.io/kubectl/pkg/cmd"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	kubeletcodec "k8s.io/kubernetes/pkg/kubelet/kubeletconfig/util/codec"
	"k8s.io/utils/cpuset"
)

func newKubeletCommand() *cobra.Command { return kubelet.NewKubeletCommand(context.Background()) }

// setKubectlVerbosity reads -v before the command tree is built, so klog
// is set up while plugins load (upstream cmd/kubectl).
func setKubectlVerbosity(args []string) {
	logs.GlogSetter(kubectl.GetLogVerbosity(args)) //nolint:errcheck
}

// What validate.go needs.

func decodeKubeletConfiguration(codecs *serializer.CodecFactory, data []byte) (*kubeletconfig.KubeletConfiguration, error) {
	return kubeletcodec.DecodeKubeletConfiguration(context.Background(), codecs, data)
}

// oneCPU is a machine the managers' constructors get to the choice of
// policy with; they refuse an unknown one before anything else of it.
var oneCPU = &cadvisorapi.MachineInfo{NumCores: 1, NumSockets: 1, Topology: []cadvisorapi.Node{{Id: 0, Cores: []cadvisorapi.Core{{Id: 0, Threads: []int{0}, SocketID: 0}}}}}

func newCPUManager(kc *kubeletconfig.KubeletConfiguration) error {
	_, err := cpumanager.NewManager(kc.CPUManagerPolicy, kc.CPUManagerPolicyOptions, time.Second, oneCPU, cpuset.New(), nil, "", topologymanager.NewFakeManager())

	return err
}

func newMemoryManager(kc *kubeletconfig.KubeletConfiguration) error {
	_, err := memorymanager.NewManager(context.Background(), kc.MemoryManagerPolicy, oneCPU, nil, nil, "", topologymanager.NewFakeManager())

	return err
}
