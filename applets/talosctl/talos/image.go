package talos

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/spf13/cobra"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
	"github.com/talosbox/talosbox/internal/installer"
	"github.com/talosbox/talosbox/internal/registry"
	"github.com/talosbox/talosbox/internal/version"
)

func NewImageCommand(g *global.Args) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "image",
		Aliases: []string{"images"},
		Short:   "Manage container images: the nodes' images, the default list, and image caches for air-gapped nodes",
		Long: `Manage container images: list and pull them on nodes, print the default image
list, build and serve image caches. Without a subcommand it prints the default
image list, as talosctl images did in Talos v0.9 (for image in $(talosctl images); do ...; done).`,
		Args: cobra.NoArgs,
	}

	def := newImageDefaultCommand(g)
	cmd.RunE = def.RunE
	cmd.Flags().AddFlagSet(def.Flags())

	ns := addImageNamespaceFlag(cmd)
	cmd.AddCommand(def, newImageListCommand(g, ns), newImagePullCommand(g, ns), newImageImportCommand(g, ns), newImageCacheCreateCommand(g), newImageCacheServeCommand(g))

	return cmd
}

func newImageDefaultCommand(g *global.Args) *cobra.Command {
	var k8s string

	cmd := &cobra.Command{
		Use:   "default",
		Short: "List the default images a node needs, one per line",
		Long: `List the images a node of the default Kubernetes version pulls, in Talos's order:
flannel, CoreDNS, the control plane, kube-proxy, the kubelet, the installer (of
this talosctl's version: what upgrade installs; make installer builds it) and pause.
talosbox embeds etcd, so unlike Talos the list has no etcd image. Feed it to image
cache-create for an air-gapped cache.`,
		Example: `  talosctl image default
  talosctl image default | talosctl image cache-create --image-cache-path ./cache --images=-`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v, err := images.CanonicalKubernetes(k8s)
			if err != nil {
				return err
			}

			for _, r := range withInstaller(images.Default(v)) {
				fmt.Fprintln(g.Env.Stdout, r)
			}

			return nil
		},
	}

	cmd.Flags().StringVar(&k8s, "kubernetes-version", images.Kubernetes, "the Kubernetes version to list the images of")

	return cmd
}

// withInstaller puts the installer image of this version before pause,
// where Talos's list has it.
func withInstaller(refs []images.Ref) []string {
	out := make([]string, 0, len(refs)+1)
	for _, r := range refs {
		out = append(out, r.String())
	}

	at := len(out)
	if at > 0 && strings.Contains(out[at-1], "/pause:") {
		at--
	}

	return slices.Insert(out, at, installer.DefaultRepository+":"+version.Tag)
}

// defaultImageStore is where `make images` leaves its OCI layout: beside
// the talosbox binary (_out/talosbox and _out/images/oci).
func defaultImageStore() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}

	return filepath.Join(filepath.Dir(exe), "images", "oci")
}

func newImageCacheCreateCommand(g *global.Args) *cobra.Command {
	var (
		list                        []string
		dir, layout                 string
		from, platforms             []string
		force, insecure, noRegistry bool
	)

	cmd := &cobra.Command{
		Use:   "cache-create",
		Short: "Create a cache of images in OCI format into a directory",
		Long: `Write the images named by --images into an OCI image layout at --image-cache-path.
Each image comes from talosbox's own build (make images, or --from) when it has it,
otherwise from its registry, when one is reachable. --images=- reads the list from
standard input, one reference per line.`,
		Example: `  talosctl image cache-create --images=ghcr.io/siderolabs/kubelet:v` + images.Kubernetes + ` --image-cache-path=/tmp/talos-image-cache
  talosctl image default | talosctl image cache-create --image-cache-path=/tmp/talos-image-cache --images=-`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return errors.New("--image-cache-path is required")
			}

			if layout != "oci" {
				return fmt.Errorf("--layout %q: only \"oci\" (an OCI image layout directory) is supported", layout)
			}

			plat, err := parsePlatform(platforms)
			if err != nil {
				return err
			}

			refs, err := readImageList(list, g.Env.Stdin)
			if err != nil {
				return err
			}

			if err := prepareCacheDir(dir, force); err != nil {
				return err
			}

			if len(from) == 0 {
				from = []string{defaultImageStore()}
			}

			return imagestore.CreateCache(cmd.Context(), imagestore.CacheOptions{
				Dir: dir, Images: refs, Sources: from, Remote: !noRegistry, Insecure: insecure,
				Platform: plat, Log: g.Env.Stderr,
			})
		},
	}

	f := cmd.Flags()
	f.StringSliceVar(&list, "images", nil, "images to cache (- reads them from standard input)")
	f.StringVar(&dir, "image-cache-path", "", "directory to save the image cache in OCI format")
	f.StringVar(&layout, "layout", "oci", `the cache layout format: "oci" for an OCI image layout directory`)
	f.StringSliceVar(&platforms, "platform", []string{"linux/amd64"}, "platform to cache (linux/amd64 is the one talosbox builds)")
	f.BoolVar(&force, "force", false, "force overwrite of existing image cache")
	f.BoolVar(&insecure, "insecure", false, "allow insecure registries (plain HTTP, unverified TLS)")
	f.StringSliceVar(&from, "from", nil, "OCI layouts to take images from before any registry (default: the one make images writes beside this binary)")
	f.BoolVar(&noRegistry, "no-registry", false, "never pull from a registry: every image must be in --from")

	return cmd
}

func parsePlatform(ps []string) (v1.Platform, error) {
	if len(ps) != 1 {
		return v1.Platform{}, fmt.Errorf("--platform: give exactly one platform (talosbox builds linux/amd64), got %d", len(ps))
	}

	p, err := v1.ParsePlatform(ps[0])
	if err != nil {
		return v1.Platform{}, fmt.Errorf("--platform %q: %w", ps[0], err)
	}

	return *p, nil
}

// readImageList expands "-" into the references on stdin.
func readImageList(list []string, stdin io.Reader) ([]string, error) {
	var refs []string

	for _, r := range list {
		if r != "-" {
			refs = append(refs, strings.TrimSpace(r))
			continue
		}

		sc := bufio.NewScanner(stdin)
		for sc.Scan() {
			if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
				refs = append(refs, line)
			}
		}

		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("--images=-: %w", err)
		}
	}

	if len(refs) == 0 {
		return nil, errors.New("no images: give --images (or --images=- and a list on standard input)")
	}

	return refs, nil
}

func prepareCacheDir(dir string, force bool) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(ents) == 0) {
		return nil
	}

	if err != nil {
		return err
	}

	if !force {
		return fmt.Errorf("image cache path %s is not empty (use --force to overwrite it)", dir)
	}

	// --force replaces an image cache, never some other directory.
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err != nil {
		return fmt.Errorf("image cache path %s is not empty and is not an image cache: refusing to remove it", dir)
	}

	return os.RemoveAll(dir)
}

func newImageCacheServeCommand(g *global.Args) *cobra.Command {
	var dir, addr, certFile, keyFile string

	cmd := &cobra.Command{
		Use:   "cache-serve",
		Short: "Serve an image cache read-only over the OCI distribution API",
		Long: `Serve the OCI image layout at --image-cache-path as a read-only registry, so that
containerd (as a registry mirror), docker pull and crane pull from it. A repository
is found by its path (HOST/kube-apiserver:TAG), by its full name
(HOST/registry.k8s.io/kube-apiserver:TAG), or through a mirror's ns parameter.
Every blob is checked against its digest before it is served. It runs until
interrupted.`,
		Example: `  talosctl image cache-serve --image-cache-path _out/images/oci --address 127.0.0.1:5000
  docker pull 127.0.0.1:5000/kube-apiserver:v` + images.Kubernetes,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return errors.New("--image-cache-path is required")
			}

			if (certFile == "") != (keyFile == "") {
				return errors.New("--tls-cert-file and --tls-key-file go together")
			}

			logger := log.New(g.Env.Stderr, "cache-serve: ", log.LstdFlags)

			srv, err := registry.New(dir, logger)
			if err != nil {
				return err
			}

			return serveRegistry(cmd.Context(), srv, addr, certFile, keyFile, logger)
		},
	}

	f := cmd.Flags()
	f.StringVar(&dir, "image-cache-path", "", "directory of the image cache in OCI format")
	f.StringVar(&addr, "address", "127.0.0.1:5000", "address to listen on")
	f.StringVar(&certFile, "tls-cert-file", "", "TLS certificate (PEM) to serve HTTPS with")
	f.StringVar(&keyFile, "tls-key-file", "", "TLS key (PEM) of --tls-cert-file")

	return cmd
}

func serveRegistry(ctx context.Context, srv *registry.Server, addr, certFile, keyFile string, logger *log.Logger) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("address %s is already in use: choose another with --address", addr)
		}

		return err
	}

	scheme := "http"

	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			ln.Close()
			return fmt.Errorf("TLS key pair: %w", err)
		}

		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
		scheme = "https"
	}

	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second, ErrorLog: logger}

	logger.Printf("serving %d images read-only on %s://%s", len(srv.Images()), scheme, ln.Addr())

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()

		logger.Printf("stopping")

		return hs.Shutdown(shutdown)
	}
}
