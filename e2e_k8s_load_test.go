//go:build e2e

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/client"

	"github.com/talosbox/talosbox/internal/images"
	"github.com/talosbox/talosbox/internal/imagestore"
)

// testClusterLoad is the README's "run your own app" step: an image that
// exists only in this host's Docker Engine, under a registry that does not
// exist, reaches every node with `talosctl cluster load` and a pod runs it
// with the default pull policy. Nothing could have pulled it.
func testClusterLoad(t *testing.T, dc *dockerCluster, imagesDir, node, nodeIP string, nodes int) {
	t.Run("cluster load puts a Docker Engine image on every node", func(t *testing.T) {
		ref := "talosbox.invalid/e2e/myapp:" + dc.name
		loadIntoEngine(t, dc.docker, imagesDir, ref)

		out := dc.okIn(t, "cluster", "load", "--name", dc.name, ref)
		if n := strings.Count(out, ": imported "+ref+" ("); n != nodes {
			t.Fatalf("cluster load imported on %d nodes, want %d:\n%s", n, nodes, out)
		}

		if list := dc.okIn(t, "-n", nodeIP, "image", "list"); !strings.Contains(list, ref) {
			t.Errorf("image list on %s lacks %s:\n%s", nodeIP, ref, list)
		}

		manifest := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"myapp"},"spec":{"nodeName":%q,
"containers":[{"name":"c","image":%q,"command":["/echo","serve"],"readinessProbe":{"httpGet":{"path":"/","port":8080}}}]}}`, node, ref)

		f := filepath.Join(dc.dir, "myapp.json")
		if err := os.WriteFile(f, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}

		dc.kube(t, "apply", "-f", f)

		waitFor(t, 3*time.Minute, "the loaded image's pod ready", func() error {
			out, err := dc.kubectl("get", "pod", "myapp", "-o", `jsonpath={.status.containerStatuses[0].ready}`)
			if err != nil || out != "true" {
				ev, _ := dc.kubectl("get", "events", "--field-selector", "involvedObject.name=myapp", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
				return fmt.Errorf("ready %q (%v); events:\n%s", out, err, ev)
			}

			return nil
		})

		// Not pulled: the kubelet found it present.
		if ev := dc.kube(t, "get", "events", "--field-selector", "involvedObject.name=myapp", "-o", "jsonpath={range .items[*]}{.reason} {end}"); strings.Contains(ev, "Pulling") {
			t.Errorf("the kubelet pulled the loaded image: %s", ev)
		}

		dc.kube(t, "delete", "pod", "myapp", "--wait=false")
	})
}

// loadIntoEngine puts the project's echo image, made distinct, into the
// local Docker Engine as ref (as `docker build -t ref` would), and removes
// it when the test ends.
func loadIntoEngine(t *testing.T, api *client.Client, imagesDir, ref string) {
	t.Helper()

	st, err := imagestore.Open(filepath.Join(imagesDir, "oci"))
	if err != nil {
		t.Fatal(err)
	}

	im, ok := st.Lookup(images.EchoImage().String())
	if !ok {
		t.Fatalf("no %s in %s", images.EchoImage(), imagesDir)
	}

	img, err := st.Image(im)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}

	// Its own image ID, so no node could have it from the image cache.
	cfg = cfg.DeepCopy()
	cfg.Config.Labels = map[string]string{"talosbox.e2e": ref}

	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}

	tag, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if err := tarball.Write(tag, img, &buf); err != nil {
		t.Fatal(err)
	}

	res, err := api.ImageLoad(t.Context(), &buf)
	if err != nil {
		t.Fatal(err)
	}

	_, _ = io.Copy(io.Discard, res)
	res.Close()

	t.Cleanup(func() {
		_, _ = api.ImageRemove(context.Background(), ref, client.ImageRemoveOptions{Force: true})
	})
}
