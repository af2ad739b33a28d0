package k8s

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// StaticPodController renders the control plane's static pods once etcd
// is healthy and their secrets and config files are written (Talos's
// ControlPlaneStaticPodController). Every pod is annotated with the
// versions of what it reads, so a change to any of them makes the kubelet
// restart it; without etcd or the files every pod is removed.
//
// The controller-manager and the scheduler follow the API server once it
// is ready: started together, as Talos starts them, they reached it before
// its bootstrap RBAC roles existed, exited ("cannot get configmaps ...
// extension-apiserver-authentication") and were started again only after
// the kubelet's crash-loop back-off, 10 s and then 20 s (measured: the
// scheduler up 21 s after the API server, and nothing scheduled until
// then). The gate opens once per bring-up of the API server's pod, or
// after GateTimeout whatever the probe says, so a probe that cannot
// succeed only restores Talos's order.
type StaticPodController struct {
	// Root is where the secrets are ("/" on a node).
	Root string
	// APIServerReady asks the local API server whether it is ready (nil:
	// its /readyz, as apiserver-kubelet-client).
	APIServerReady func(ctx context.Context, port int) error
	// ProbeInterval paces the probe (500 ms); GateTimeout ends the wait
	// (1 min).
	ProbeInterval, GateTimeout time.Duration
}

// Name implements bus.Controller.
func (*StaticPodController) Name() string { return "k8s.ControlPlaneStaticPodController" }

// Inputs implements bus.Controller.
func (*StaticPodController) Inputs() []bus.Input {
	return []bus.Input{
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.APIServerConfigType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.ControllerManagerConfigType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.SchedulerConfigType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.SecretsStatusType},
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.ConfigStatusType},
		{Namespace: runtime.NamespaceRuntime, Type: v1alpha1.ServiceType, ID: "etcd"},
	}
}

// Outputs implements bus.Controller.
func (*StaticPodController) Outputs() []bus.Output { return []bus.Output{{Type: k8s.StaticPodType}} }

// Run implements bus.Controller.
func (c *StaticPodController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	interval, timeout := cmp.Or(c.ProbeInterval, 500*time.Millisecond), cmp.Or(c.GateTimeout, time.Minute)

	ready := c.APIServerReady
	if ready == nil {
		ready = c.readyz
	}

	probe := time.NewTimer(time.Hour)
	probe.Stop()

	defer probe.Stop()

	var (
		open    bool      // the API server has been ready in this bring-up
		waiting time.Time // since when the others wait for it
	)

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-probe.C:
		}

		want, port, err := c.pods(ctx, r)
		if err != nil {
			return err
		}

		switch _, api := want[k8s.APIServerID]; {
		case !api:
			open, waiting = false, time.Time{}
		case !open:
			if waiting.IsZero() {
				waiting = time.Now()
			}

			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err := ready(pctx, port)

			cancel()

			switch {
			case err == nil:
				open = true
			case time.Since(waiting) >= timeout:
				open = true

				r.Logger().Warn("starting the controller-manager and the scheduler without a ready API server", "waited", timeout, "error", err)
			default:
				probe.Reset(interval)
			}
		}

		if !open {
			delete(want, k8s.ControllerManagerID)
			delete(want, k8s.SchedulerID)
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.StaticPodType, want); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

// readyz asks the API server on this node for /readyz, which holds until
// its post-start hooks (the bootstrap RBAC roles among them) are done.
func (c *StaticPodController) readyz(ctx context.Context, port int) error {
	dir := filepath.Join(cmp.Or(c.Root, "/"), constants.SecretsDir, k8s.APIServerID)

	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "apiserver-kubelet-client.crt"), filepath.Join(dir, "apiserver-kubelet-client.key"))
	if err != nil {
		return err
	}

	cas, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		return err
	}

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(cas)

	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ServerName: "localhost"}}}
	defer hc.CloseIdleConnections()

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/readyz", port), nil)
	if err != nil {
		return err
	}

	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz: %s", resp.Status)
	}

	return nil
}

// pods are the static pods to run, and the API server's local port.
func (c *StaticPodController) pods(ctx context.Context, r bus.ControllerRuntime) (map[string]k8s.StaticPodSpec, int, error) {
	want := map[string]k8s.StaticPodSpec{}
	port := 0

	etcd, err := bus.GetAs[*v1alpha1.Service](ctx, r, v1alpha1.ServicePointer("etcd"))
	if bus.IsNotFound(err) || (err == nil && !(etcd.TypedSpec().Running && etcd.TypedSpec().Healthy)) {
		return want, port, nil
	}

	if err != nil {
		return nil, port, err
	}

	status := func(typ string) (k8s.StatusSpec, bool, error) {
		s, err := bus.GetAs[*k8s.Status](ctx, r, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: typ, ID: k8s.StaticPodsStatusID})
		if bus.IsNotFound(err) {
			return k8s.StatusSpec{}, false, nil
		}

		if err != nil {
			return k8s.StatusSpec{}, false, err
		}

		return *s.TypedSpec(), s.TypedSpec().Ready, nil
	}

	sec, ok, err := status(k8s.SecretsStatusType)
	if err != nil || !ok {
		return want, port, err
	}

	conf, ok, err := status(k8s.ConfigStatusType)
	if err != nil || !ok {
		return want, port, err
	}

	for id, typ := range map[string]string{k8s.APIServerID: k8s.APIServerConfigType, k8s.ControllerManagerID: k8s.ControllerManagerConfigType, k8s.SchedulerID: k8s.SchedulerConfigType} {
		cc, err := bus.GetAs[*k8s.ComponentConfig](ctx, r, bus.Pointer{Namespace: k8s.NamespaceControlPlane, Type: typ, ID: id})
		if bus.IsNotFound(err) {
			continue
		}

		if err != nil {
			return nil, port, err
		}

		spec := cc.TypedSpec()
		if !spec.Enabled {
			continue
		}

		if id == k8s.APIServerID {
			port = spec.LocalPort
		}

		pod, err := render.StaticPodFor(id, *spec, render.PodVersions{Secrets: sec.Version, Config: strconv.FormatUint(cc.Metadata().Version, 10), ConfigFile: conf.Version})
		if err != nil {
			r.Logger().Error("static pod", "id", id, "error", err)
			continue
		}

		want[id] = k8s.StaticPodSpec{Pod: pod}
	}

	return want, port, nil
}
