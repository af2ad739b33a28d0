package imager

import (
	"fmt"
	"os"
	"strings"

	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/installer"
)

const customizeUsage = `Usage: talosbox imager customize [--root DIR] [--customization DIR] [--rm "PATH..."]

Rebuild an installer image's initramfs with a customization, as the seeds'
Dockerfile flow does: the installer image's ONBUILD triggers copy the
Dockerfile's customization stage to /customization and run this, inside
docker build, with the build's RM argument. The paths in --rm (default
$RM, whitespace separated) are removed from the node's root filesystem
first, then the customization's files are added; modules.dep is made
again when kernel modules changed, and a kernel at /usr/install/vmlinuz
replaces the image's. The result is an installer image that
talosctl upgrade installs:

  FROM scratch AS customization
  COPY hello.txt /usr/local/share/hello.txt
  FROM ghcr.io/talosbox/installer:<version>

  docker build --build-arg RM="/usr/share/doc" -t <org>/installer:custom .

Flags:
`

func customizeMain(args []string, env applet.Env) int {
	fs := applet.NewFlags("imager customize", customizeUsage, env)

	var root, dir, rm string

	fs.StringVar(&root, "root", "/", "the installer image's filesystem")
	fs.StringVar(&dir, "customization", "/"+installer.CustomizationDir, "the customization stage's files (removed afterwards)")
	fs.StringVar(&rm, "rm", os.Getenv("RM"), "paths to remove from the node's root filesystem first, whitespace separated")

	if code, done := fs.Parse(args); done {
		return code
	}

	if fs.NArg() > 0 {
		fmt.Fprintf(env.Stderr, "imager customize: unexpected argument %q (see --help)\n", fs.Arg(0))
		return 2
	}

	err := installer.Customize(installer.Customization{Root: root, Dir: dir, RM: strings.Fields(rm), Log: env.Stdout})
	if err != nil {
		fmt.Fprintf(env.Stderr, "imager customize: %v\n", err)
		return 1
	}

	return 0
}
