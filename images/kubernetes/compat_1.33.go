//go:build ignore

// What main.go needs as Kubernetes 1.33 spells it (internal/imagebuild
// copies this file as compat.go for that minor).
package main

import (
	"time"

	cadvisorapi "github.com/google/cadvisor/info/v1"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	"k8s.io/kubernetes/pkg/kubelet/cm/cpumanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/memorymanager"
	"k8s.io/kubernetes/pkg/kubelet/cm/topologymanager"
	kubeletcodec "k8s.io/kubernetes/pkg/kubelet/kubeletconfig/util/codec"
	"k8s.io/utils/cpuset"
)

// newKubeletCommand: 1.33's takes no context.
func newKubeletCommand() *cobra.Command { return kubelet.NewKubeletCommand() }

// setKubectlVerbosity: 1.33's kubectl reads -v in its flag parsing only.
func setKubectlVerbosity([]string) {}

// What validate.go needs.

func decodeKubeletConfiguration(codecs *serializer.CodecFactory, data []byte) (*kubeletconfig.KubeletConfiguration, error) {
	return kubeletcodec.DecodeKubeletConfiguration(codecs, data)
}

// oneCPU is a machine the managers' constructors get to the choice of
// policy with; they refuse an unknown one before anything else of it.
var oneCPU = &cadvisorapi.MachineInfo{NumCores: 1, NumSockets: 1, Topology: []cadvisorapi.Node{{Id: 0, Cores: []cadvisorapi.Core{{Id: 0, Threads: []int{0}, SocketID: 0}}}}}

func newCPUManager(kc *kubeletconfig.KubeletConfiguration) error {
	_, err := cpumanager.NewManager(kc.CPUManagerPolicy, kc.CPUManagerPolicyOptions, time.Second, oneCPU, cpuset.New(), nil, "", topologymanager.NewFakeManager())

	return err
}

func newMemoryManager(kc *kubeletconfig.KubeletConfiguration) error {
	_, err := memorymanager.NewManager(kc.MemoryManagerPolicy, oneCPU, nil, nil, "", topologymanager.NewFakeManager())

	return err
}
