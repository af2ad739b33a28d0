//go:build e2e

package metaltest

// The installer images the upgrade tests pull take minutes to build: a
// link per version, an initramfs at zstd's best level and an image each.
// They are built once per test process, and in the background from
// TestMain when a test that pulls them is selected. So they are ready by
// the time the earlier tests' guests have run, or another package has let
// go of the guest lock, rather than built by each test while the guests
// wait (the QEMU tests run one after another, so their builds were on
// the suite's critical path).

import (
	"cmp"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/talosbox/talosbox/boot/qemu"
	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/imagestore"
)

// The installer images of the upgrade tests, tagged in installerRepo.
const (
	installerRepo = "ghcr.io/talosbox/installer"
	upgradeV2     = "v0.0.2-upgrade" // v2: a build stamped so
	brokenV3      = "v0.0.3-broken"  // v3: a build whose every boot fails
)

// k8sInstaller is TestQEMUKubernetes's installer image: from a registry
// of its own (a reserved name), so that the image cache stays ghcr.io's
// mirror for the kubelet.
const k8sInstaller = "installer.test/talosbox/installer:v1"

// installers is one OCI layout of installer images.
type installers struct {
	layout string // the OCI layout (serve it with serveLayout)
	v1     string // the version of the binary under test
	log    string // what building them printed
	// initramfs is v1's zstd initramfs, the one its installer image
	// carries: the boot media tests make their ISO and PXE assets of it.
	initramfs string
}

// upgradeInstallers is installerRepo's v1 (the binary under test), v2, v3
// and no-kernel (an image without /usr/install), for TestMetalUpgrade
// and TestQEMUCluster.
var upgradeInstallers = sync.OnceValues(func() (*installers, error) {
	return buildInstallers(func(bin, dir, v1 string, log *strings.Builder) (string, error) {
		v2, err := buildVersion(upgradeV2, false)
		if err != nil {
			return "", err
		}

		v3, err := buildVersion(brokenV3, true)
		if err != nil {
			return "", err
		}

		// v2 is customized both ways a user customizes: a system extension
		// (Talos's imager) adds files, then the seeds' Dockerfile flow adds
		// one more file and one more of the kernel's modules and removes
		// one of the extension's files (TestMetalUpgrade looks for all of
		// it after the upgrade).
		ext, err := helloExtension(dir)
		if err != nil {
			return "", err
		}

		custom := func(o *initramfs.Options) { o.Extensions = []initramfs.Extension{ext} }

		var first string

		for _, i := range []struct {
			bin, tag, version string
			opts              []func(*initramfs.Options)
		}{{bin, "v1", v1, nil}, {v2, "v2-base", upgradeV2, []func(*initramfs.Options){custom}}, {v3, "v3", brokenV3, nil}} {
			p, err := installerImage(log, i.bin, dir, installerRepo+":"+i.tag, i.version, initramfs.Runtime{}, i.opts...)
			if err != nil {
				return "", err
			}

			first = cmp.Or(first, p)
		}

		if err := dockerCustomize(dir, installerRepo+":v2-base", installerRepo+":v2", log); err != nil {
			return "", err
		}

		junk, err := random.Image(512, 1)
		if err != nil {
			return "", err
		}

		_, err = imagestore.Write(filepath.Join(dir, "oci"), []imagestore.Named{{Ref: installerRepo + ":no-kernel", Image: junk}})

		return first, err
	})
})

// k8sInstallers is k8sInstaller: the binary under test with the
// container runtime, as make installer builds it, for a node that runs
// the kubelet after it boots from its disk.
var k8sInstallers = sync.OnceValues(func() (*installers, error) {
	return buildInstallers(func(bin, dir, v1 string, log *strings.Builder) (string, error) {
		root, err := qemu.RepoRoot()
		if err != nil {
			return "", err
		}

		rt, err := initramfs.RuntimeIn(filepath.Join(root, "_out", "images"))
		if err != nil {
			return "", fmt.Errorf("the container runtime (make images): %w", err)
		}

		return installerImage(log, bin, dir, k8sInstaller, v1, rt)
	})
})

func buildInstallers(build func(bin, dir, v1 string, log *strings.Builder) (string, error)) (*installers, error) {
	start := time.Now()

	bin, err := binary()
	if err != nil {
		return nil, err
	}

	out, err := exec.Command(bin, "--version").Output()
	if err != nil || len(strings.Fields(string(out))) < 2 {
		return nil, fmt.Errorf("%s --version: %v: %q", bin, err, out)
	}

	v1 := strings.Fields(string(out))[1]

	w, err := work()
	if err != nil {
		return nil, err
	}

	dir, err := os.MkdirTemp(w, "installers-")
	if err != nil {
		return nil, err
	}

	var log strings.Builder

	initrd, err := build(bin, dir, v1, &log)
	if err != nil {
		return nil, fmt.Errorf("installer images: %w", err)
	}

	fmt.Fprintf(&log, "built in %s", time.Since(start).Round(100*time.Millisecond))

	return &installers{layout: filepath.Join(dir, "oci"), v1: v1, log: log.String(), initramfs: initrd}, nil
}

// pull waits for a set of installer images and logs how they were built.
func pull(t *testing.T, set func() (*installers, error)) *installers {
	t.Helper()

	i, err := set()
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("installer images in %s:\n%s", i.layout, i.log)

	return i
}

// prebuild starts building, one set after another, the installer images
// the selected tests pull, in the order the tests run.
func prebuild() {
	var sets []func() (*installers, error)

	if selected("TestQEMUCluster", "TestMetalUpgrade", "TestMetalISO", "TestMetalPXE") {
		sets = append(sets, upgradeInstallers)
	}

	if selected("TestQEMUKubernetes") {
		sets = append(sets, k8sInstallers)
	}

	go func() {
		for _, set := range sets {
			_, _ = set() // a failure is reported to the tests that pull it
		}
	}()
}

// selected says whether -run selects one of the top-level tests names
// (without -run, all are).
func selected(names ...string) bool {
	f := flag.Lookup("test.run")
	if f == nil || f.Value.String() == "" {
		return true
	}

	re, err := regexp.Compile(strings.Split(f.Value.String(), "/")[0])
	if err != nil {
		return true
	}

	for _, n := range names {
		if re.MatchString(n) {
			return true
		}
	}

	return false
}

// installerImage builds an installer image (`talosbox imager installer`,
// what make installer runs) from bin, with a zstd initramfs as users'
// have, into the OCI layout dir/oci, and returns that initramfs's path.
// With a container runtime (runc and the CNI plugins) its initramfs is
// what make installer ships.
func installerImage(log *strings.Builder, bin, dir, ref, version string, rt initramfs.Runtime, opts ...func(*initramfs.Options)) (string, error) {
	k, err := kernel()
	if err != nil {
		return "", err
	}

	tmp, err := os.MkdirTemp(dir, "initramfs-")
	if err != nil {
		return "", err
	}

	p := filepath.Join(tmp, "initramfs.cpio.zst")

	// The guest's drivers; a Kubernetes node gets what cluster create
	// gives it (the default set: netfilter, overlay, vxlan...).
	mods := append([]string(nil), guestModules...)
	if rt.Runc != "" {
		mods = nil
	}

	o := initramfs.Options{Binary: bin, ModulesDir: k.ModulesDir, Modules: mods, Compression: initramfs.Zstd, Runtime: rt}
	for _, f := range opts {
		f(&o)
	}

	res, err := initramfs.BuildFile(p, o)
	if err != nil {
		return "", err
	}

	if rt.Runc != "" {
		// What make initramfs INITRAMFS_FLAGS="--compress zstd" ships (every
		// default module, the container runtime, zstd's best level): its
		// size is the node's initramfs figure (target 30 MB).
		fmt.Fprintf(log, "the shipped initramfs: %.1f MiB zstd (%d bytes; %d uncompressed), %d entries, %d modules\n",
			float64(res.Size)/(1<<20), res.Size, res.CPIOSize, res.Entries, len(res.Modules))
	}

	out, err := exec.Command(bin, "imager", "installer", "--out", dir, "--kernel-dir", filepath.Dir(filepath.Dir(k.Image)),
		"--kernel-version", k.Release, "--initramfs", p, "--tag", ref, "--image-version", version).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("imager installer %s: %w\n%s", ref, err, out)
	}

	fmt.Fprintf(log, "%s\n", strings.TrimSpace(string(out)))

	return p, nil
}

// The customization of upgradeInstallers' v2: a module the other
// versions do not carry, and an extension's file.
const (
	extraModule = "nbd"
	helloPath   = "/usr/local/share/hello/hello.txt"
	helloText   = "hello from a system extension\n"
)

// helloExtension lays out a system extension as Talos's images hold one.
func helloExtension(dir string) (initramfs.Extension, error) {
	ext := filepath.Join(dir, "ext-hello")
	p := filepath.Join(ext, "rootfs", helloPath)

	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return initramfs.Extension{}, err
	}

	if err := os.WriteFile(p, []byte(helloText), 0o644); err != nil {
		return initramfs.Extension{}, err
	}

	// The Dockerfile's RM removes this one.
	if err := os.WriteFile(filepath.Join(ext, "rootfs", rmPath), []byte("removed by RM\n"), 0o644); err != nil {
		return initramfs.Extension{}, err
	}

	manifest := "version: v1alpha1\nmetadata:\n  name: hello\n  version: 1.0.0\n  author: talosbox tests\n  description: one file\n"
	if err := os.WriteFile(filepath.Join(ext, "manifest.yaml"), []byte(manifest), 0o644); err != nil {
		return initramfs.Extension{}, err
	}

	return initramfs.ReadExtension(ext)
}

// buildVersion builds talosbox stamped with version (and BROKEN_BOOT=1
// for a release whose every boot fails).
func buildVersion(version string, broken bool) (string, error) {
	return buildInWork("talosbox-"+version, func(root, out string) *exec.Cmd {
		args := []string{"-s", "-C", root, "build", "OUT=" + out, "VERSION=" + version}
		if broken {
			args = append(args, "BROKEN_BOOT=1")
		}

		return exec.Command("make", args...)
	})
}
