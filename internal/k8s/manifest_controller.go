package k8s

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/manifests"
	k8srender "github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// ManifestController renders the bootstrap manifests of a control plane
// from its config, plus cluster.inlineManifests and the downloaded
// cluster.extraManifests (Talos's ManifestController and
// ExtraManifestController in one). A manifest that fails to download or
// parse is retried; meanwhile it is published with its error and the
// objects it last had (none before its first success), so that pruning
// never takes a download failure for a removed manifest. Every manifest
// carries the digest of the set's IDs (ManifestSpec.Set).
type ManifestController struct {
	// HTTPClient fetches extraManifests (http.DefaultClient).
	HTTPClient *http.Client
}

// Name implements bus.Controller.
func (*ManifestController) Name() string { return "k8s.ManifestController" }

// Inputs implements bus.Controller.
func (*ManifestController) Inputs() []bus.Input { return []bus.Input{machineConfigInput} }

// Outputs implements bus.Controller.
func (*ManifestController) Outputs() []bus.Output { return []bus.Output{{Type: k8s.ManifestType}} }

// Run implements bus.Controller.
func (c *ManifestController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	retry := time.NewTimer(time.Hour)
	retry.Stop()

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-retry.C:
		}

		cfg, err := activeConfig(ctx, r)
		if err != nil {
			return err
		}

		want := map[string]k8s.ManifestSpec{}

		if cfg != nil && cfg.IsControlPlane() {
			ms, failed, err := c.render(ctx, cfg)
			if err != nil {
				// Nothing rendered: withdrawing every manifest would
				// read as all removed, so keep what is published.
				r.Logger().Error("bootstrap manifests", "error", err)
				retry.Reset(10 * time.Second)

				continue
			}

			for _, m := range ms {
				spec := k8s.ManifestSpec{}
				for _, o := range m.Objects {
					spec.Items = append(spec.Items, o.Object)
				}

				want[m.ID] = spec
			}

			for _, id := range slices.Sorted(maps.Keys(failed)) {
				r.Logger().Error("bootstrap manifests", "error", failed[id])
				retry.Reset(10 * time.Second)

				spec := k8s.ManifestSpec{Error: failed[id].Error()}

				prev, err := bus.GetAs[*k8s.Manifest](ctx, r, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: k8s.ManifestType, ID: id})

				switch {
				case err == nil:
					spec.Items = prev.TypedSpec().Items
				case !bus.IsNotFound(err):
					return err
				}

				want[id] = spec
			}

			set := manifestSet(slices.Collect(maps.Keys(want)))
			for id, spec := range want {
				spec.Set = set
				want[id] = spec
			}
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceControlPlane, k8s.ManifestType, want); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

// ManifestOptions are the bootstrap manifests' settings from the config.
func ManifestOptions(cfg *configs.Config) (manifests.Options, error) {
	return k8srender.ManifestOptions(cfg)
}

// render renders the manifests of cfg. failed are the manifests that
// could not be downloaded or parsed, by ID; err says nothing rendered.
func (c *ManifestController) render(ctx context.Context, cfg *configs.Config) (ms []manifests.Manifest, failed map[string]error, err error) {
	o, err := ManifestOptions(cfg)
	if err != nil {
		return nil, nil, err
	}

	if ms, err = manifests.Render(o); err != nil {
		return nil, nil, err
	}

	failed = map[string]error{}
	cl := cfg.Cluster

	var external []configs.ExternalManifest
	if n := cl.Network; n != nil && n.CNI != nil && n.CNI.Name == "custom" {
		for _, u := range n.CNI.URLs {
			external = append(external, configs.ExternalManifest{ID: "05-" + u, URL: u, Headers: cl.ExtraManifestHeaders})
		}
	}

	// cluster.extraManifests, then the KubeExternalManifestConfig
	// documents, each with its own headers.
	external = append(external, configs.ExternalManifests(cfg)...)

	for _, e := range external {
		data, err := c.download(ctx, e.URL, e.Headers)
		if err == nil {
			var m manifests.Manifest
			if m, err = manifests.Parse(e.ID, data); err == nil {
				ms = append(ms, m)
				continue
			}
		}

		failed[e.ID] = fmt.Errorf("extra manifest %s: %w", e.URL, err)
	}

	for _, im := range cl.InlineManifests {
		m, err := manifests.Inline(im.Name, im.Contents)
		if err != nil {
			failed["99-"+im.Name] = err

			continue
		}

		ms = append(ms, m)
	}

	return ms, failed, nil
}

func (c *ManifestController) download(ctx context.Context, url string, headers map[string]string) ([]byte, error) {
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}

	for k, v := range headers {
		req.Header.Set(k, v)
	}

	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET: %s", resp.Status)
	}

	return io.ReadAll(io.LimitReader(resp.Body, 16<<20))
}
