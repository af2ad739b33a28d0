#!/usr/bin/env bash
# The main job: build, then create a local cluster in Docker (1 control
# plane, 1 worker) with `talosctl cluster create`, and show what to try.
# `make run-down` destroys it.
#
#   scripts/run.sh LINKS_DIR
#   CLUSTER   the cluster's name (default talos-default)
#   ARGS      more flags for `talosctl cluster create` (e.g. "--workers 2")
set -euo pipefail
links=$1
name=${CLUSTER:-talos-default}

if ! docker_sock=$(ls /var/run/docker.sock 2>/dev/null) && [ -z "${DOCKER_HOST:-}" ]; then
  echo "no Docker Engine socket at /var/run/docker.sock and DOCKER_HOST is unset: start dockerd first" >&2
  exit 1
fi

# shellcheck disable=SC2086 # ARGS is a list of flags
"$links/talosctl" cluster create --name "$name" --controlplanes 1 --workers 1 ${ARGS:-}

# cluster create merged the admin kubeconfig into ~/.kube/config (or
# $KUBECONFIG) as admin@$name, now the current context.
echo
echo "\$ kubectl get nodes -o wide"
"$links/kubectl" get nodes -o wide

cat <<MSG

The cluster "$name" is up; its context is the current one in ~/.talos/config
(or \$TALOSCONFIG). Try:
  $links/talosctl get addresses
  $links/talosctl services
  $links/talosctl logs machined --tail 20
  $links/talosctl etcd members
  $links/talosctl health
  $links/talosctl -n 10.5.0.3 version          # the worker, through the control plane
  $links/talosctl cluster show --name $name
  $links/kubectl get pods -A                    # kubectl is built from source by make images
  $links/talosctl get staticpods
Tear it down with: make run-down

MSG
