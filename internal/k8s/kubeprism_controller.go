package k8s

import (
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/k8s/render"
	"github.com/talosbox/talosbox/internal/resources/cluster"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// KubePrismController runs KubePrism while machine.features.kubePrism is
// on: a load balancer on 127.0.0.1:<port> (7445) in front of the node's
// own API server (on control planes), the cluster endpoint and every
// control plane that discovery lists, which the kubelet, the
// controller-manager, the scheduler, kube-proxy and flannel use (Talos's
// KubePrism{Config,Endpoints,Controller}). It checks the upstreams every
// Interval and publishes them and its health.
type KubePrismController struct {
	// Interval paces the health checks (5 s).
	Interval time.Duration
	// Host is where it listens (127.0.0.1; tests use another loopback address).
	Host string
	// Root prefixes the kubelet's client certificate, which the health
	// checks present to the API servers (APIServerProbe).
	Root string
	// Probe replaces APIServerProbe (tests of the balancing alone).
	Probe func(ctx context.Context, upstream string) error
}

// Name implements bus.Controller.
func (*KubePrismController) Name() string { return "k8s.KubePrismController" }

// Inputs implements bus.Controller.
func (*KubePrismController) Inputs() []bus.Input {
	return []bus.Input{machineConfigInput, {Namespace: cluster.Namespace, Type: cluster.MemberType}}
}

// Outputs implements bus.Controller.
func (*KubePrismController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.KubePrismEndpointsType}, {Type: k8s.KubePrismStatusType}}
}

// Run implements bus.Controller.
func (c *KubePrismController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	every := cmp.Or(c.Interval, 5*time.Second)
	host := c.Host
	if host == "" {
		host = "127.0.0.1"
	}

	prism := &Prism{}
	srv := prismServer{prism: prism}

	defer srv.stop()

	tick := time.NewTicker(every)
	defer tick.Stop()

	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
		case <-tick.C:
		}

		cfg, err := activeConfig(ctx, r)
		if err != nil {
			return err
		}

		members, err := bus.ListAs[*cluster.Member](ctx, r, bus.Kind{Namespace: cluster.Namespace, Type: cluster.MemberType})
		if err != nil {
			return err
		}

		port := KubePrismPort(cfg)
		ups, upErr := kubePrismUpstreams(cfg, members)

		if port != srv.port {
			srv.stop()
		}

		status := k8s.KubePrismStatusSpec{Host: net.JoinHostPort("localhost", strconv.Itoa(port))}

		if port != 0 && srv.port == 0 {
			if err := srv.start(ctx, net.JoinHostPort(host, strconv.Itoa(port))); err != nil {
				// Retried at the next tick: the port may be freed.
				status.Error = err.Error()
			}
		}

		if upErr != nil {
			status.Error = upErr.Error()
		}

		prism.SetUpstreams(ups)
		prism.Probe = c.probe(cfg)

		endpoints, statuses := map[string]k8s.KubePrismEndpointsSpec{}, map[string]k8s.KubePrismStatusSpec{}

		if port != 0 {
			status.Healthy = srv.port != 0 && prism.Check(ctx)
			statuses[k8s.KubePrismID] = status

			spec := k8s.KubePrismEndpointsSpec{Endpoints: []k8s.KubePrismEndpoint{}}
			for _, up := range ups {
				h, p, _ := net.SplitHostPort(up)
				n, _ := strconv.Atoi(p)
				spec.Endpoints = append(spec.Endpoints, k8s.KubePrismEndpoint{Host: h, Port: n})
			}

			endpoints[k8s.KubePrismID] = spec
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.KubePrismEndpointsType, endpoints); err != nil {
			return err
		}

		if err := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceK8s, k8s.KubePrismStatusType, statuses); err != nil {
			return err
		}

		r.ResetRestartBackoff()
	}
}

// probe is how upstreams are checked: their /readyz, verified against
// the cluster's CA, with the kubelet's client certificate.
func (c *KubePrismController) probe(cfg *configs.Config) func(ctx context.Context, upstream string) error {
	if c.Probe != nil {
		return c.Probe
	}

	var pool *x509.CertPool

	// The CA and the accepted ones: during a rotation, and on a worker
	// whose CA is a KubeAPIServerCAConfig's acceptedCAs.
	if cfg != nil && cfg.Cluster != nil {
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(render.KubeletCABundle(render.KubeletCAs(cfg))) {
			pool = nil
		}
	}

	return APIServerProbe(pool, filepath.Join(cmp.Or(c.Root, "/"), constants.KubeletCertDir, "kubelet-client-current.pem"))
}

// prismServer is the listener a KubePrismController runs.
type prismServer struct {
	prism  *Prism
	port   int
	cancel context.CancelFunc
	done   chan struct{}
}

func (s *prismServer) start(ctx context.Context, addr string) error {
	var lc net.ListenConfig

	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("kubeprism: %w", err)
	}

	_, p, _ := net.SplitHostPort(ln.Addr().String())
	s.port, _ = strconv.Atoi(p)

	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})

	go func() {
		defer close(s.done)

		s.prism.Serve(ctx, ln) //nolint:errcheck // a failed Accept ends it; the next check reports it unhealthy
	}()

	return nil
}

func (s *prismServer) stop() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}

	s.port, s.cancel = 0, nil
}

// KubePrismPort is the port KubePrism listens on for cfg, 0 when it is
// off (see render.KubePrismPort).
func KubePrismPort(cfg *configs.Config) int { return render.KubePrismPort(cfg) }

// kubePrismUpstreams are the API servers KubePrism balances, the node's
// own first (on a control plane that is the one its kubelet runs), then
// the cluster endpoint, then the control planes among members, at the API
// server port their records carry: with those, a node whose endpoint is
// down (a Docker cluster's first control plane) still reaches the
// cluster. A record from an earlier version carries no port; its node is
// taken to listen on this node's localAPIServerPort, which a cluster's
// nodes share.
func kubePrismUpstreams(cfg *configs.Config, members []*cluster.Member) ([]string, error) {
	if cfg == nil || cfg.Cluster == nil {
		return nil, nil
	}

	cl, err := render.ClusterFrom(cfg)
	if err != nil {
		return nil, err
	}

	var ups []string

	if cfg.IsControlPlane() {
		ups = append(ups, net.JoinHostPort("127.0.0.1", strconv.Itoa(cl.LocalPort)))
	}

	port := cl.Endpoint.Port()
	if port == "" {
		port = "443"
	}

	add := func(ep string) {
		if !slices.Contains(ups, ep) {
			ups = append(ups, ep)
		}
	}

	add(net.JoinHostPort(cl.Endpoint.Hostname(), port))

	for _, m := range members {
		spec := m.TypedSpec()
		if spec.MachineType != configs.MachineTypeControlPlane && spec.MachineType != configs.MachineTypeInit {
			continue
		}

		apiPort := cl.LocalPort
		if spec.ControlPlane != nil {
			apiPort = spec.ControlPlane.APIServerPort
		}

		for _, a := range spec.Addresses {
			add(net.JoinHostPort(a.String(), strconv.Itoa(apiPort)))
		}
	}

	return ups, nil
}
