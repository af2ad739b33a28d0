package cri

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/registry"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// RegistrydServiceID serves the node's image cache, as Talos's registryd.
const RegistrydServiceID = "registryd"

// Registryd serves the image cache in dir (images.CacheDir when empty)
// read-only on images.CacheAddr, when the node has one (a Docker node made
// by cluster create from make images' output): the CRI's mirrors point
// there, so the node pulls Kubernetes without any registry. ok is false
// when dir holds no index.json.
func Registryd(dir string) (svc supervisor.Service, ok bool) {
	if dir == "" {
		dir = images.CacheDir
	}

	if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
		return supervisor.Service{}, false
	}

	return supervisor.Service{
		ID: RegistrydServiceID,
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, w io.Writer) error {
			srv, err := registry.New(dir, log.New(w, "", 0))
			if err != nil {
				return fmt.Errorf("image cache %s: %w", dir, err)
			}

			l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", images.CacheAddr)
			if err != nil {
				return fmt.Errorf("image cache: %w", err)
			}

			fmt.Fprintf(w, "serving %d images from %s on %s\n", len(srv.Images()), dir, images.CacheMirror)

			hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
			go func() {
				<-ctx.Done()
				hs.Close() //nolint:errcheck // stopping
			}()

			if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("image cache: %w", err)
			}

			return nil
		}),
	}, true
}
