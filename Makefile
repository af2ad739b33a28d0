# talosbox: one static binary for an API-managed Kubernetes node.
#
#   make run        build, then a local cluster in Docker (the README's main job)
#   make run-down   destroy that cluster
#   make conformance  the upstream Kubernetes [Conformance] suite on a new 1+2 Docker cluster
#   make qemu       one metal node under QEMU; make qemu-cluster, several (talosctl cluster create qemu)
#   make test       install what the tests need, lint, unit/integration tests, fuzz briefly
#   make fast       the quick lane: every package's tests without the end-to-end suites
#   make build      _out/talosbox, static, version-stamped
#   make images     every image a node runs, built from source into _out/images/oci (cached)
#   make installer  the installer image (kernel, initramfs, GRUB) nodes install and upgrade from
#   make iso        a hybrid ISO (BIOS and UEFI) that boots a machine into maintenance mode;
#                   make disk-image, an installed raw disk image (metal-amd64.raw.zst); make pxe, PXE assets
#   make lint       gofmt, go vet, staticcheck
#   make generate   regenerate generated code
#   make bench      the in-process benchmarks; make bench-<area> one script (scripts/README.md)

GO       ?= go
OUT      ?= _out/talosbox
BIN_DIR  ?= _out/bin
FUZZTIME ?= 10s
# What make images builds, keyed by its inputs, outside the clone: a fresh clone on a machine
# that has built once reuses it, as Go reuses its build cache (make clean leaves it).
TALOSBOX_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/talosbox

# go test must get the same -trimpath as go build, or it rebuilds the world. The tags leave
# out the containerd snapshotters that need C libraries (btrfs) or tools (devmapper, zfs);
# go test needs them too, since it builds with cgo for -race.
TAGS := no_btrfs,no_devmapper,no_zfs
export GOFLAGS := -trimpath -tags=$(TAGS)
# The end-to-end suites (the root package's Docker and Kubernetes clusters, boot/metaltest and
# boot/guesttest's QEMU guests) build only with the e2e tag: make unit and make lint add it, so
# make test runs and checks everything, while make fast (go test ./...) is the quick lane. In
# GOFLAGS, not -tags, so that the test binaries the suites build for guests get it too.
E2E_GOFLAGS := -trimpath -tags=$(TAGS),e2e

VERSION ?= $(shell git describe --tags --dirty --match 'v*' 2>/dev/null || echo v0.0.0-$$(git rev-parse --short HEAD 2>/dev/null || echo dev))
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
# The commit's own date keeps a rebuild of the same commit byte-identical.
DATE    ?= $(shell TZ=UTC git log -1 --format=%cd --date=format:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u +%Y-%m-%dT%H:%M:%SZ)

VERSION_PKG := github.com/talosbox/talosbox/internal/version
CONTAINERD_VERSION := $(shell sed -n 's/^\tContainerd = "\(.*\)"/\1/p' internal/images/versions.go)
LDFLAGS     := -s -w -X $(VERSION_PKG).Tag=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(DATE) \
	-X github.com/containerd/containerd/v2/version.Version=$(CONTAINERD_VERSION) \
	$(if $(BROKEN_BOOT),-X $(VERSION_PKG).BrokenBoot=1)

.PHONY: all build images installer install-links run run-down conformance qemu qemu-cluster qemu-cluster-down deps lint unit fast fuzz test generate check-generate check-kubeflags bench clean

all: build

build:
	@mkdir -p $(dir $(OUT))
	CGO_ENABLED=0 $(GO) build -ldflags '$(LDFLAGS)' -o $(OUT) .
	@ls -l $(OUT) | awk '{print "built " $$9 " (" $$5 " bytes)"}'

# Every container image a node runs (Kubernetes, CoreDNS, flannel, pause), built from
# source into the OCI layout _out/images/oci; kubectl lands in _out/bin. Incremental:
# builds and layers are keyed by their inputs in $(TALOSBOX_CACHE)/images, and a run with
# nothing changed builds nothing, from this checkout or a fresh clone.
# K8S=all also builds the previous minor (upgrade-k8s); IMAGES_FLAGS adds flags.
# Each version's component flags land in configs/kubeflags/data (config validation).
images: install-links
	./$(OUT) imager --out _out/images --cache $(TALOSBOX_CACHE)/images --kubernetes $${K8S:-default} --kubectl $(BIN_DIR) --kubeflags configs/kubeflags/data --kubeschema configs/kubeschema/data $(IMAGES_FLAGS)

# The node's initramfs, _out/initramfs.cpio: this binary as /init, Debian's cloud kernel's
# modules and the container runtime (runc, the CNI plugins) that make images builds
# (initramfs/README.md). INITRAMFS_FLAGS adds flags, e.g. --compress zstd, --with-tools.
.PHONY: initramfs
initramfs: images
	TALOSBOX=$(OUT) scripts/kernel.sh _out/kernel >/dev/null
	$(OUT) initramfs --binary $(OUT) --kernel-dir _out/kernel $(INITRAMFS_FLAGS)

# The installer image (internal/installer): the kernel, a zstd initramfs and GRUB's BIOS images,
# as ghcr.io/talosbox/installer:$(VERSION) in the image cache _out/images/oci. Nodes install and
# upgrade from it (talosctl upgrade --image), pulled through talosctl image cache-serve.
.PHONY: installer
installer: images
	TALOSBOX=$(OUT) scripts/kernel.sh _out/kernel >/dev/null
	$(OUT) initramfs --binary $(OUT) --kernel-dir _out/kernel --compress zstd -o _out/initramfs.cpio.zst $(INITRAMFS_FLAGS)
	$(OUT) imager installer --out _out/images --kernel-dir _out/kernel --initramfs _out/initramfs.cpio.zst

# Boot media (internal/bootmedia) from the installer's kernel and initramfs: a hybrid ISO that boots
# on BIOS and UEFI from a CD-ROM or a USB stick, and PXE assets (kernel, initramfs, boot.ipxe).
# MEDIA_FLAGS adds flags: --extra-kernel-arg console=ttyS0, --config-url URL, --base-url URL (pxe).
.PHONY: iso pxe disk-image
iso: installer
	$(OUT) imager iso --out _out/talosbox-amd64.iso --kernel-dir _out/kernel --initramfs _out/initramfs.cpio.zst $(MEDIA_FLAGS)

# The raw disk image (metal-amd64.raw.zst): already installed, boots on BIOS and UEFI; EPHEMERAL
# grows to the disk's end on the first boot. MEDIA_FLAGS as for iso (--platform nocloud, ...).
disk-image: installer
	$(OUT) imager metal --out _out/metal-amd64.raw.zst --kernel-dir _out/kernel --initramfs _out/initramfs.cpio.zst $(MEDIA_FLAGS)

pxe: installer
	$(OUT) imager pxe --out _out/pxe --kernel-dir _out/kernel --initramfs _out/initramfs.cpio.zst $(MEDIA_FLAGS)

# One metal node under QEMU, its console in this terminal (scripts/qemu-node.sh).
qemu: install-links
	@scripts/qemu-node.sh

# A cluster of QEMU machines on a private segment (root: the host's port is a tap): talosctl cluster
# create qemu. CONTROLPLANES, WORKERS, CLUSTER; QEMU_FLAGS adds flags.
qemu-cluster: installer
	@TALOSBOX=$(OUT) scripts/kernel.sh _out/kernel >/dev/null
	$(BIN_DIR)/talosctl cluster create qemu --name $${CLUSTER:-talos-default} --controlplanes $${CONTROLPLANES:-3} \
	  --workers $${WORKERS:-1} --cpus 1 --cpus-workers 1 --memory 1024 --memory-workers 1024 --kernel-dir _out/kernel $(QEMU_FLAGS)

qemu-cluster-down: install-links
	@$(BIN_DIR)/talosctl cluster destroy --provisioner qemu --name $${CLUSTER:-talos-default}

install-links: build
	./$(OUT) --install $(BIN_DIR)

# deps first: a fresh machine lacks what make images builds with (libseccomp-dev for runc).
run: deps install-links images
	@scripts/run.sh $(BIN_DIR)

# The upstream [Conformance] suite against a new 1+2 Docker cluster (scripts/conformance.sh):
# MODE=certified (default) or fast, ARGS="--focus ..." to narrow it (no spaces: one flag per word),
# PROVISIONER=qemu for 1 untainted control plane and 1 worker under QEMU.
conformance: deps install-links images
	@scripts/conformance.sh $(BIN_DIR)

run-down: install-links
	@$(BIN_DIR)/talosctl cluster destroy --name $${CLUSTER:-talos-default}

deps:
	scripts/install-deps.sh

lint: GOFLAGS := $(E2E_GOFLAGS)
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './_out/*')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# The race detector needs cgo; the binary itself never does. Two rounds,
# in one report: every package but the end-to-end suites, then the suites
# (E2E_PKGS). go test runs two test binaries at a time, and the suites
# take both slots for most of the run, so in one round the other packages
# waited for the root package to end and then ran beside the QEMU
# Kubernetes node, whose API server under TCG slows down far more than
# in proportion when it shares the cores (its cluster create took 13 min
# instead of 4). The root package's cluster tests run one after another
# for longer than go test's default 10m timeout, and boot/metaltest's
# clock runs while it waits for the guest lock the root package's
# Kubernetes test holds. Plain go test output, then the slowest packages
# and tests (scripts/testreport); the events stay in _out/unit.json.
MODULE := $(shell sed -n "s/^module //p" go.mod)
E2E_PKGS := . ./boot/guesttest ./boot/metaltest
unit: SHELL := /bin/bash
unit: GOFLAGS := $(E2E_GOFLAGS)
unit: export TALOSBOX_IMAGE_CACHE = $(TALOSBOX_CACHE)/images
unit:
	@mkdir -p _out
	set -o pipefail; { \
	  CGO_ENABLED=1 $(GO) test -race -count=1 -json $$($(GO) list ./... | grep -vxF $(foreach p,$(E2E_PKGS),-e $(MODULE)$(patsubst .%,%,$(p)))); s=$$?; \
	  CGO_ENABLED=1 $(GO) test -race -count=1 -timeout 100m -json $(E2E_PKGS) || s=1; exit $$s; \
	} | $(GO) run ./scripts/testreport -json _out/unit.json -top 25

# The quick lane: every package's own tests under -race, without the end-to-end suites.
fast: SHELL := /bin/bash
fast:
	@mkdir -p _out
	set -o pipefail; CGO_ENABLED=1 $(GO) test -race -count=1 -json ./... | $(GO) run ./scripts/testreport -json _out/fast.json -top 15

fuzz:
	FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# The checked-in generated code must be what `make generate` makes.
check-generate: generate
	@git diff --exit-code --stat -- '*.pb.go' '*/zz_generated_*.go' || { echo "generated code is stale: run make generate and commit"; exit 1; }

# The checked-in flag lists and config schemas (configs/kubeflags/data, configs/kubeschema/data)
# must be what the built binaries say.
check-kubeflags: images
	@test -z "$$(git status --porcelain configs/kubeflags/data configs/kubeschema/data)" || { git status --porcelain configs/kubeflags/data configs/kubeschema/data; \
	  echo "the flag lists or config schemas are stale: run make images and commit configs/kubeflags/data configs/kubeschema/data"; exit 1; }

# The tests need the previous Kubernetes minor too (upgrade-k8s starts from it).
test: export K8S = all
test: deps lint check-generate images check-kubeflags unit fuzz

generate:
	$(GO) generate ./...

bench:
	scripts/bench.sh

# bench-<area>: scripts/bench-<area>.sh (scripts/README.md lists them).
BENCHES := $(patsubst scripts/bench-%.sh,bench-%,$(wildcard scripts/bench-*.sh))
.PHONY: $(BENCHES)
$(BENCHES): bench-%:
	scripts/bench-$*.sh

clean:
	rm -rf _out
