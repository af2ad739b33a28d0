package k8s

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// StaticPodServerController serves every StaticPod as one PodList on a
// random loopback port, the kubelet's staticPodURL (Talos's
// StaticPodServerController). The pods never touch the disk, and
// /etc/kubernetes/manifests stays the user's.
type StaticPodServerController struct {
	// Addr is where to listen (127.0.0.1:0).
	Addr string
}

// Name implements bus.Controller.
func (*StaticPodServerController) Name() string { return "k8s.StaticPodServerController" }

// Inputs implements bus.Controller.
func (*StaticPodServerController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: k8s.NamespaceK8s, Type: k8s.StaticPodType}}
}

// Outputs implements bus.Controller.
func (*StaticPodServerController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.StaticPodServerStatusType}}
}

// Run implements bus.Controller.
func (c *StaticPodServerController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	addr := c.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}

	l, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}

	var (
		mu   sync.Mutex
		body = []byte("apiVersion: v1\nkind: PodList\nitems: []\n")
	)

	srv := &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			b := body
			mu.Unlock()

			w.Header().Set("Content-Type", "application/yaml")
			w.Write(b) //nolint:errcheck // the kubelet polls again
		}),
	}

	go srv.Serve(l) //nolint:errcheck // ends with Shutdown

	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()

		srv.Shutdown(sctx) //nolint:errcheck // best effort on the way out
	}()

	url := "http://" + l.Addr().String()

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		}

		pods, err := bus.ListAs[*k8s.StaticPod](ctx, r, bus.Kind{Namespace: k8s.NamespaceK8s, Type: k8s.StaticPodType})
		if err != nil {
			return err
		}

		sort.Slice(pods, func(i, j int) bool { return pods[i].Metadata().ID < pods[j].Metadata().ID })

		items := make([]any, 0, len(pods))
		for _, p := range pods {
			items = append(items, p.TypedSpec().Pod)
		}

		b, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "kind": "PodList", "items": items})
		if err != nil {
			return errors.Join(errors.New("static pods"), err)
		}

		mu.Lock()
		body = b
		mu.Unlock()

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.StaticPodServerStatusType,
			map[string]k8s.StaticPodServerStatusSpec{k8s.StaticPodServerID: {URL: url}}); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}
