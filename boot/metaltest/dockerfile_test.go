//go:build e2e

package metaltest

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/talosbox/talosbox/initramfs"
	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/registry"
)

// What the seeds' Dockerfile flow adds to upgradeInstallers' v2 on top of
// its extension, and what its RM removes from the extension's files.
const (
	dockerPath = "/usr/local/share/hello/docker.txt"
	dockerText = "hello from a Dockerfile's customization stage\n"
	rmPath     = "/usr/local/share/hello/rm-me.txt"
)

// dockerCustomize makes ref from base (both in the layout dir/oci) as a
// user of the seeds (001 §11-12) does: a Dockerfile whose stage named
// customization carries a file and one more of the kernel's modules
// (extraModule), built FROM the base installer with docker build (the
// classic builder, which runs the image's ONBUILD triggers) and
// --build-arg RM. The base is pulled from a registry on this host serving
// the layout; the result is docker save'd into the layout as ref.
func dockerCustomize(dir, base, ref string, out *strings.Builder) error {
	k, err := kernel()
	if err != nil {
		return err
	}

	mods, err := initramfs.OpenModules(k.ModulesDir)
	if err != nil {
		return err
	}

	mod, ok := mods.Path(extraModule)
	if !ok {
		return fmt.Errorf("the kernel has no %s module", extraModule)
	}

	layout := filepath.Join(dir, "oci")

	srv, err := registry.New(layout, log.New(io.Discard, "", 0))
	if err != nil {
		return err
	}

	hs := httptest.NewServer(srv)
	defer hs.Close()

	ctx := filepath.Join(dir, "dockerfile-"+filepath.Base(ref))
	if err := os.MkdirAll(ctx, 0o755); err != nil {
		return err
	}

	data, err := os.ReadFile(filepath.Join(k.ModulesDir, mod))
	if err != nil {
		return err
	}

	from := strings.TrimPrefix(hs.URL, "http://") + "/" + strings.TrimPrefix(base, "ghcr.io/")
	label := fmt.Sprintf("talosbox.test.customize=%d", os.Getpid())
	files := map[string]string{
		"docker.txt": dockerText,
		"module.ko":  string(data),
		// The label marks every image the build makes (the classic
		// builder keeps the customization stage's, untagged), for the
		// prune below.
		"Dockerfile": "FROM scratch AS customization\n" +
			"LABEL " + label + "\n" +
			"COPY docker.txt " + dockerPath + "\n" +
			"COPY module.ko /lib/modules/" + k.Release + "/" + mod + "\n" +
			"FROM " + from + "\n" +
			"LABEL " + label + "\n",
	}

	for name, data := range files {
		if err := os.WriteFile(filepath.Join(ctx, name), []byte(data), 0o644); err != nil {
			return err
		}
	}

	tag := fmt.Sprintf("talosbox-test/installer:custom-%d", os.Getpid())

	defer func() {
		// Cleanup, best effort: the result, the pulled base, the stages.
		exec.Command("docker", "rmi", "-f", tag, from).Run()                             //nolint:errcheck // cleanup
		exec.Command("docker", "image", "prune", "-f", "--filter", "label="+label).Run() //nolint:errcheck // cleanup
	}()

	build := exec.Command("docker", "build", "--build-arg", "RM="+rmPath+" /usr/share/not-there", "-t", tag, ctx)
	build.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")

	b, err := build.CombinedOutput()
	if err != nil {
		return fmt.Errorf("docker build: %w\n%s", err, b)
	}

	for _, want := range []string{"Executing 3 build triggers", "customize: removed " + rmPath, "customize: added 2 files"} {
		if !strings.Contains(string(b), want) {
			return fmt.Errorf("docker build's output lacks %q:\n%s", want, b)
		}
	}

	fmt.Fprintf(out, "docker build FROM %s with a customization stage: %s\n", base, ref)

	tar := filepath.Join(ctx, "image.tar")
	if b, err := exec.Command("docker", "save", "-o", tar, tag).CombinedOutput(); err != nil {
		return fmt.Errorf("docker save: %w\n%s", err, b)
	}

	img, err := tarball.ImageFromPath(tar, nil)
	if err != nil {
		return err
	}

	_, err = imagestore.Write(layout, []imagestore.Named{{Ref: ref, Image: img}})

	return err
}
