package cri

import (
	"testing"

	"github.com/containerd/containerd/v2/core/remotes/docker"
)

// TestDefaultHostIsContainerds keeps defaultHost, which the package has so
// as not to import containerd, in step with the containerd it configures.
func TestDefaultHostIsContainerds(t *testing.T) {
	for _, host := range []string{"docker.io", "registry-1.docker.io", "ghcr.io", "registry.k8s.io", "10.5.0.1:5000", "*", ""} {
		want, err := docker.DefaultHost(host)
		if err != nil {
			t.Fatalf("docker.DefaultHost(%q): %v", host, err)
		}

		if got := defaultHost(host); got != want {
			t.Errorf("defaultHost(%q) = %q, containerd's is %q", host, got, want)
		}
	}
}
