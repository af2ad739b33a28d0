#!/usr/bin/env bash
# Measures the image build and the image cache (build time, cache hits, sizes):
#   - the incremental no-op of `make images` (nothing changed), and a fresh
#     clone's (an empty output dir, the cache outside the clone);
#   - with COLD=1, a cold build of every program for one Kubernetes
#     version: a fresh output dir AND an empty Go build cache (about 15
#     minutes on 2 cores; the module cache is kept, so downloads are not timed);
#   - with SEPARATE=1, the size and link time of the six Kubernetes
#     components as separate binaries, against the one shared binary;
#   - each image's size, the whole cache's size;
#   - pull throughput from `talosctl image cache-serve` with CLIENTS (4)
#     parallel HTTP clients each fetching every blob of every image.
#
#   scripts/bench-images.sh
#   COLD=1 SEPARATE=1 CLIENTS=4 scripts/bench-images.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$PATH:/usr/local/go/bin
make -s install-links >/dev/null
bin=$PWD/_out/talosbox
store=$PWD/_out/images/oci
cache=${TALOSBOX_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/talosbox}/images
clients=${CLIENTS:-4}
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT

secs() { echo "$(date +%s.%N)"; }
took() { printf '%.1f' "$(echo "$(secs) - $1" | bc)"; }

echo "== make images (warm: the build is there or is made now)"
"$bin" imager --out _out/images --cache "$cache" --kubectl _out/bin | tail -1

t=$(secs)
"$bin" imager --out _out/images --cache "$cache" | grep -E 'nothing to do|done in'
echo "no-op run: $(took "$t") s"

echo "== a fresh clone's make images: an empty output dir, the cache outside the clone"
t=$(secs)
"$bin" imager --out "$tmp/fresh" --cache "$cache" | grep -E 'done in'
echo "fresh output dir, warm cache: $(took "$t") s"

if [ "${COLD:-0}" = 1 ]; then
  echo "== cold build (empty output dir, empty Go build cache)"
  t=$(secs)
  GOCACHE=$tmp/gocache "$bin" imager --out "$tmp/cold" | grep -E 'built in|done in'
  echo "cold build of every program and image: $(took "$t") s"
fi

if [ "${SEPARATE:-0}" = 1 ]; then
  echo "== Kubernetes components as separate binaries (warm Go build cache: link time)"
  src=$(ls -d "$cache"/src/kubernetes-v* | head -1)
  total=0
  for c in kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet kubectl; do
    t=$(secs)
    (cd "$src" && CGO_ENABLED=0 GOFLAGS='-trimpath -buildvcs=false -mod=mod' go build -ldflags '-s -w' -o "$tmp/sep-$c" "k8s.io/kubernetes/cmd/$c")
    size=$(stat -c %s "$tmp/sep-$c")
    total=$((total + size))
    printf '  %-24s %6.1f MiB, linked in %s s\n' "$c" "$(echo "$size / 1048576" | bc -l)" "$(took "$t")"
  done
  shared=$(ls "$cache"/build/kubernetes-*/kubernetes | head -1)
  t=$(secs)
  (cd "$src" && CGO_ENABLED=0 GOFLAGS='-trimpath -buildvcs=false -mod=mod' go build -ldflags '-s -w' -o "$tmp/shared" .)
  printf '  separate: %.1f MiB in all; shared binary: %.1f MiB, linked in %s s\n' \
    "$(echo "$total / 1048576" | bc -l)" "$(echo "$(stat -c %s "$shared") / 1048576" | bc -l)" "$(took "$t")"
fi

echo "== image sizes (compressed, as pulled; shared layers counted in each image)"
python3 - "$store" <<'PY'
import json, os, sys
store = sys.argv[1]
idx = json.load(open(os.path.join(store, "index.json")))
blob = lambda d: os.path.join(store, "blobs", *d.split(":"))
for m in idx["manifests"]:
    man = json.load(open(blob(m["digest"])))
    size = man["config"]["size"] + sum(l["size"] for l in man["layers"])
    print(f'  {m["annotations"]["io.containerd.image.name"]:50} {size/2**20:7.1f} MiB  {len(man["layers"])} layers')
PY
echo "  whole cache on disk (each blob once): $(du -sh --apparent-size "$store" | cut -f1)"

echo "== pull throughput: $clients parallel clients, every blob of every image"
"$bin" talosctl image cache-serve --image-cache-path "$store" --address 127.0.0.1:0 2>"$tmp/serve.log" &
for _ in $(seq 100); do grep -q serving "$tmp/serve.log" && break; sleep 0.1; done # wait for the listener
addr=$(grep -o 'http://[^ ]*' "$tmp/serve.log" | head -1)
[ -n "$addr" ] || { cat "$tmp/serve.log"; exit 1; }
python3 - "$store" > "$tmp/urls" "$addr" <<'PY'
import json, os, sys
store, addr = sys.argv[1], sys.argv[2]
idx = json.load(open(os.path.join(store, "index.json")))
for m in idx["manifests"]:
    ref = m["annotations"]["io.containerd.image.name"]
    repo = ref.rsplit(":", 1)[0]
    man = json.load(open(os.path.join(store, "blobs", *m["digest"].split(":"))))
    for d in [m["digest"], man["config"]["digest"]] + [l["digest"] for l in man["layers"]]:
        print(f"{addr}/v2/{repo}/blobs/{d}")
PY
bytes_per_client=$(python3 -c "
import json,os,sys
s='$store'; idx=json.load(open(os.path.join(s,'index.json'))); t=0
for m in idx['manifests']:
    man=json.load(open(os.path.join(s,'blobs',*m['digest'].split(':'))))
    t+=m['size']+man['config']['size']+sum(l['size'] for l in man['layers'])
print(t)")
curl -s -o /dev/null "$(head -1 "$tmp/urls")" # the first request verifies each blob once; measure the steady state
for u in $(cat "$tmp/urls"); do curl -s -o /dev/null "$u"; done
t=$(secs)
for c in $(seq "$clients"); do
  (for u in $(cat "$tmp/urls"); do curl -sf -o /dev/null "$u" || echo "client $c: $u failed"; done) &
done
wait $(jobs -p | grep -v "$(pgrep -f 'image cache-serve' | head -1)") 2>/dev/null || true
elapsed=$(took "$t")
printf '  %d clients x %.1f MiB in %s s: %.0f MiB/s\n' "$clients" "$(echo "$bytes_per_client / 1048576" | bc -l)" "$elapsed" \
  "$(echo "$clients * $bytes_per_client / 1048576 / $elapsed" | bc -l)"
