package k8s

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// KubeletPodsURL is the kubelet's list of the pods it runs.
const KubeletPodsURL = "https://127.0.0.1:10250/pods/"

// StaticPodStatusController polls the kubelet for its static pods'
// statuses (Talos's KubeletStaticPodController), so `get staticpodstatus`
// and health see the control plane run even while the API server is
// down. It authenticates as apiserver-kubelet-client, which control
// planes hold; the kubelet's serving certificate is self-signed.
type StaticPodStatusController struct {
	// Root is where the secrets are ("/" on a node).
	Root string
	// Interval paces the polls (5 s).
	Interval time.Duration
	// URL overrides KubeletPodsURL (tests).
	URL string
}

// Name implements bus.Controller.
func (*StaticPodStatusController) Name() string { return "k8s.KubeletStaticPodController" }

// Inputs implements bus.Controller.
func (*StaticPodStatusController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: k8s.NamespaceK8s, Type: k8s.StaticPodType}}
}

// Outputs implements bus.Controller.
func (*StaticPodStatusController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.StaticPodStatusType}}
}

// Run implements bus.Controller.
func (c *StaticPodStatusController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	every := c.Interval
	if every == 0 {
		every = 5 * time.Second
	}

	tick := time.NewTicker(every)
	defer tick.Stop()

	// The last poll's error, logged when it changes: a kubelet that
	// cannot authorize the poll (its API server is unreachable once its
	// authorization cache expires) leaves the statuses as last seen.
	var lastErr string

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-tick.C:
		}

		pods, err := r.List(ctx, bus.Kind{Namespace: k8s.NamespaceK8s, Type: k8s.StaticPodType})
		if err != nil {
			return err
		}

		want := map[string]k8s.StaticPodStatusSpec{}

		if len(pods) > 0 {
			got, err := c.poll(ctx)
			if msg := errString(err); msg != lastErr {
				if err != nil {
					r.Logger().Info("kubelet pods unavailable: keeping the statuses last seen", "error", msg)
				} else {
					r.Logger().Info("kubelet pods available again")
				}

				lastErr = msg
			}

			if err != nil {
				// The kubelet may be starting: keep what was last seen.
				continue
			}

			want = got
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.StaticPodStatusType, want); err != nil {
			return err
		}
	}
}

func (c *StaticPodStatusController) poll(ctx context.Context) (map[string]k8s.StaticPodStatusSpec, error) {
	root := c.Root
	if root == "" {
		root = "/"
	}

	dir := filepath.Join(root, constants.SecretsDir, k8s.APIServerID)

	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "apiserver-kubelet-client.crt"), filepath.Join(dir, "apiserver-kubelet-client.key"))
	if err != nil {
		return nil, err
	}

	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, InsecureSkipVerify: true}, //nolint:gosec // the kubelet's serving cert is self-signed
	}}
	defer hc.CloseIdleConnections()

	url := c.URL
	if url == "" {
		url = KubeletPodsURL
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}

	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("kubelet pods: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}

	var list struct {
		Items []struct {
			Metadata struct {
				Name        string            `json:"name"`
				Namespace   string            `json:"namespace"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
			Status map[string]any `json:"status"`
		} `json:"items"`
	}

	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("kubelet pods: %w", err)
	}

	out := map[string]k8s.StaticPodStatusSpec{}

	for _, p := range list.Items {
		switch p.Metadata.Annotations["kubernetes.io/config.source"] {
		case "file", "http":
			out[p.Metadata.Namespace+"/"+p.Metadata.Name] = k8s.StaticPodStatusSpec{PodStatus: p.Status}
		}
	}

	return out, nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}

	return err.Error()
}
