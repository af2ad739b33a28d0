#!/usr/bin/env bash
# The node runtime's numbers: the CRI containerd from exec to SERVING on
# its gRPC health service, and its RSS when idle (the same instance a node
# runs, configs rendered by internal/cri), on this machine's kernel.
# Pull times through a mirror and start-to-healthy on nodes are printed by
# TestDockerNodeRunsContainers and TestMetalNodeRunsContainers (-v).
set -euo pipefail
cd "$(dirname "$0")/.."
export GOFLAGS='-trimpath -tags=no_btrfs,no_devmapper,no_zfs,e2e' # the benchmark is in the e2e suite
go test -run '^$' -bench BenchmarkCRIContainerdStart -benchtime "${COUNT:-10}x" .
