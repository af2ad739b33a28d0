package provision

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"
)

// BuildRequest describes a node image: the static talosbox binary at /talosbox on top of an
// empty (scratch) image, plus the few directories a scratch image lacks.
type BuildRequest struct {
	// Tag is the image reference to build, e.g. "talosbox:dev".
	Tag string
	// Binary is the path of the static talosbox binary on this machine. It must not need a
	// dynamic loader: the image has none.
	Binary string
	// Applets are symlinks to /talosbox: a bare name ("talosctl") goes to /usr/local/bin, an
	// absolute path ("/sbin/init") is used as is.
	Applets []string
	// Entrypoint defaults to ["/talosbox", "machined"].
	Entrypoint []string
	// Cmd is the image's default arguments; nil means none.
	Cmd []string
	// OSRelease, when set, is the image's /etc/os-release (the kubelet's
	// OS image for the node).
	OSRelease []byte
	// Files are more static executables, image path → file on this machine
	// ("/bin/runc": "_out/images/runtime/runc"), put in with mode 0755.
	Files map[string]string
	// Links are more symlinks, image path → target, kept as they are
	// ("/usr/sbin/iptables": "xtables-nft-multi").
	Links map[string]string
	// Env are KEY=VALUE pairs baked into the image, e.g. TALOSBOX_PLATFORM=container.
	Env []string
	// Labels are put on the image.
	Labels map[string]string
	// NoCache disables the builder's layer cache.
	NoCache bool
}

// ContextLabel is put on a node image: the digest of the build context it was
// built from. The context is reproducible (fixed times and owners), so an image
// under the same tag with the same digest holds exactly what a build would make.
const ContextLabel = "dev.talosbox.build-context"

// BuildImage builds req into the local image store with the classic builder, so that
// `FROM scratch` needs neither a registry nor BuildKit. The build context is generated in
// memory. Builder output lines go to progress (may be nil); a build failure reported in the
// stream (errorDetail) is returned as an error.
//
// An image already under req.Tag that was built from the same context is kept as it
// is (unless req.NoCache): sending the builder 100 MB of context to have its cache
// hit took 5-8 s of every cluster create.
func (d *Docker) BuildImage(ctx context.Context, req BuildRequest, progress io.Writer) error {
	if req.Tag == "" {
		return fmt.Errorf("%w: build: image tag is empty", ErrInvalidRequest)
	}
	buildCtx, err := buildContext(req)
	if err != nil {
		return fmt.Errorf("build %s: %w", req.Tag, err)
	}
	sum := sha256.Sum256(buildCtx.Bytes())
	digest := "sha256:" + hex.EncodeToString(sum[:])
	if !req.NoCache {
		img, err := d.api.ImageInspect(ctx, req.Tag)
		switch {
		case err == nil && img.Config != nil && img.Config.Labels[ContextLabel] == digest:
			if progress != nil {
				fmt.Fprintf(progress, "%s is up to date (build context %s)\n", req.Tag, digest[:19])
			}
			return nil
		case err != nil && !isNotFound(err):
			return fmt.Errorf("inspect image %s: %w", req.Tag, err)
		}
	}
	labels := maps.Clone(req.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[ContextLabel] = digest
	return d.build(ctx, req.Tag, labels, req.NoCache, buildCtx, progress)
}

// build sends a ready tar build context to the classic builder and follows its output.
func (d *Docker) build(ctx context.Context, tag string, labels map[string]string, noCache bool, buildCtx io.Reader, progress io.Writer) error {
	if progress == nil {
		progress = io.Discard
	}
	res, err := d.api.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags:    []string{tag},
		Labels:  labels,
		NoCache: noCache,
		// The classic builder: BuildKit would want a session and its own frontend image.
		Version: build.BuilderV1,
		// Never leave intermediate containers behind, even when a step fails.
		Remove:      true,
		ForceRemove: true,
	})
	if err != nil {
		return fmt.Errorf("build %s: %w", tag, err)
	}
	defer res.Body.Close()

	if err := followBuild(res.Body, progress); err != nil {
		return fmt.Errorf("build %s: %w", tag, err)
	}
	return nil
}

// followBuild decodes the builder's JSON message stream, copies its text to progress and
// returns the first error the builder reports. The HTTP status of a build is 200 even when a
// step fails: the stream is the only place the failure shows up.
func followBuild(body io.Reader, progress io.Writer) error {
	dec := json.NewDecoder(body)
	for {
		var msg jsonstream.Message
		if err := dec.Decode(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading builder output: %w", err)
		}
		if msg.Error != nil {
			return fmt.Errorf("builder: %w", msg.Error)
		}
		switch {
		case msg.Stream != "":
			_, _ = io.WriteString(progress, msg.Stream)
		case msg.Status != "":
			line := msg.Status
			if msg.ID != "" {
				line = msg.ID + ": " + line
			}
			if !strings.HasSuffix(line, "\n") {
				line += "\n"
			}
			_, _ = io.WriteString(progress, line)
		}
	}
}

// ImageExists reports whether ref is in the local image store.
func (d *Docker) ImageExists(ctx context.Context, ref string) (bool, error) {
	if ref == "" {
		return false, nil
	}
	if _, err := d.api.ImageInspect(ctx, ref); err != nil {
		if isNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return true, nil
}
