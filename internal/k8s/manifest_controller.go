package k8s

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/manifests"
)

// ManifestController renders the bootstrap manifests of a control plane
// from its config, plus cluster.inlineManifests and the downloaded
// cluster.extraManifests (Talos's ManifestController and
// ExtraManifestController in one). A manifest that fails to download is
// retried; the others are published meanwhile.
type ManifestController struct {
	// HTTPClient fetches extraManifests (http.DefaultClient).
	HTTPClient *http.Client
}

// Name implements bus.Controller.
func (*ManifestController) Name() string { return "k8s.ManifestController" }

// Inputs implements bus.Controller.
func (*ManifestController) Inputs() []bus.Input { return []bus.Input{machineConfigInput} }

// Outputs implements bus.Controller.
func (*ManifestController) Outputs() []bus.Output { return []bus.Output{{Type: ManifestType}} }

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

		want := map[string]ManifestSpec{}

		if cfg != nil && cfg.IsControlPlane() {
			ms, err := c.render(ctx, cfg)
			if err != nil {
				r.Logger().Error("bootstrap manifests", "error", err)
				retry.Reset(10 * time.Second)
			}

			for _, m := range ms {
				spec := ManifestSpec{}
				for _, o := range m.Objects {
					spec.Items = append(spec.Items, o.Object)
				}

				want[m.ID] = spec
			}
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), NamespaceControlPlane, ManifestType, want); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

// ManifestOptions are the bootstrap manifests' settings from the config.
func ManifestOptions(cfg *configs.Config) (manifests.Options, error) {
	cl, err := ClusterFrom(cfg)
	if err != nil {
		return manifests.Options{}, err
	}

	c := cfg.Cluster
	o := manifests.Options{
		ClusterName: cl.Name, Server: cl.Endpoint.String(),
		PodSubnets: cl.PodSubnets, ServiceSubnets: cl.ServiceSubnets, DNSDomain: cl.DNSDomain,
		BootstrapToken: c.Token,
		ProxyEnabled:   true, CoreDNSEnabled: true, FlannelEnabled: true,
	}

	if p := c.Proxy; p != nil {
		o.ProxyEnabled = !p.Disabled
		o.ProxyImage, o.ProxyMode, o.ProxyExtraArgs = p.Image, p.Mode, p.ExtraArgs
	}

	if d := c.CoreDNS; d != nil {
		o.CoreDNSEnabled = !d.Disabled
		o.CoreDNSImage = d.Image
	}

	if n := c.Network; n != nil && n.CNI != nil {
		o.FlannelEnabled = n.CNI.Name == "" || n.CNI.Name == "flannel"
		if n.CNI.Flannel != nil {
			o.FlannelExtraArgs = n.CNI.Flannel.ExtraArgs
		}
	}

	return o, nil
}

func (c *ManifestController) render(ctx context.Context, cfg *configs.Config) ([]manifests.Manifest, error) {
	o, err := ManifestOptions(cfg)
	if err != nil {
		return nil, err
	}

	ms, err := manifests.Render(o)
	if err != nil {
		return nil, err
	}

	cl := cfg.Cluster

	var urls []string
	if n := cl.Network; n != nil && n.CNI != nil && n.CNI.Name == "custom" {
		for _, u := range n.CNI.URLs {
			urls = append(urls, "05-"+u)
		}
	}

	for _, u := range cl.ExtraManifests {
		urls = append(urls, "99-"+u)
	}

	var firstErr error

	for _, id := range urls {
		url := id[3:]

		data, err := c.download(ctx, url, cl.ExtraManifestHeaders)
		if err == nil {
			var m manifests.Manifest
			if m, err = manifests.Parse(id, data); err == nil {
				ms = append(ms, m)
				continue
			}
		}

		if firstErr == nil {
			firstErr = fmt.Errorf("extra manifest %s: %w", url, err)
		}
	}

	for _, im := range cl.InlineManifests {
		m, err := manifests.Inline(im.Name, im.Contents)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}

			continue
		}

		ms = append(ms, m)
	}

	return ms, firstErr
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
