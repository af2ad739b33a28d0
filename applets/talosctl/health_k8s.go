package talosctl

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"gopkg.in/yaml.v3"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/client"
)

// Kubernetes' checks, as Talos's health runs them after the node's own.
// They talk to the API server with the admin kubeconfig a control plane
// hands out, over plain HTTPS: client-go stays out of talosctl.
var kubernetesChecks = []healthCheck{
	{name: "kubelet to be healthy", check: checkKubelet},
	{name: "all k8s nodes to report", check: checkNodesReport},
	{name: "all control plane static pods to be running", check: checkStaticPods(false)},
	{name: "all control plane components to be ready", check: checkStaticPods(true)},
	{name: "all k8s nodes to report ready", check: checkNodesReady},
	{name: "kube-proxy to report ready", check: checkWorkload("apis/apps/v1/namespaces/kube-system/daemonsets/kube-proxy")},
	{name: "coredns to report ready", check: checkWorkload("apis/apps/v1/namespaces/kube-system/deployments/coredns")},
	{name: "all k8s nodes to report schedulable", check: checkSchedulable},
}

// kubeAPI is a minimal client of the cluster's API server.
type kubeAPI struct {
	server string
	hc     *http.Client
}

// kube fetches the admin kubeconfig from the first control plane once.
func (s *session) kube(ctx context.Context) (*kubeAPI, error) {
	if s.kubeClient != nil {
		return s.kubeClient, nil
	}

	results := fanOut(ctx, s.on(s.controlPlanes[:1]), func(ctx context.Context, c *client.Client) ([]byte, error) {
		return fetchKubeconfig(ctx, c)
	})

	if err := results[0].Err; err != nil {
		if status.Code(err) == codes.PermissionDenied {
			return nil, errNoAdmin
		}

		return nil, fmt.Errorf("kubeconfig: %s", client.Message(err))
	}

	k, err := kubeAPIFrom(results[0].Value)
	if err != nil {
		return nil, err
	}

	if s.kubeServer != "" {
		k.server = strings.TrimSuffix(s.kubeServer, "/")
	}

	s.kubeClient = k

	return k, nil
}

func kubeAPIFrom(data []byte) (*kubeAPI, error) {
	var kc struct {
		Clusters []struct {
			Cluster struct {
				Server string `yaml:"server"`
				CA     string `yaml:"certificate-authority-data"`
			} `yaml:"cluster"`
		} `yaml:"clusters"`
		Users []struct {
			User struct {
				Cert string `yaml:"client-certificate-data"`
				Key  string `yaml:"client-key-data"`
			} `yaml:"user"`
		} `yaml:"users"`
	}

	if err := yaml.Unmarshal(data, &kc); err != nil || len(kc.Clusters) == 0 || len(kc.Users) == 0 {
		return nil, fmt.Errorf("kubeconfig: not one the node should hand out: %v", err)
	}

	dec := func(s string) []byte { b, _ := base64.StdEncoding.DecodeString(s); return b }

	cert, err := tls.X509KeyPair(dec(kc.Users[0].User.Cert), dec(kc.Users[0].User.Key))
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}

	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(dec(kc.Clusters[0].Cluster.CA)) {
		return nil, errors.New("kubeconfig: no CA")
	}

	return &kubeAPI{server: strings.TrimSuffix(kc.Clusters[0].Cluster.Server, "/"), hc: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}},
	}}, nil
}

// errNotFound is a 404 from the API server.
var errNotFound = errors.New("not found")

func (k *kubeAPI) get(ctx context.Context, path string, v any) error {
	return k.do(ctx, http.MethodGet, path, nil, v)
}

// do sends one request; a 2xx answer is decoded into v (when v is not
// nil), a 404 is errNotFound, anything else an error with the body's
// start.
func (k *kubeAPI) do(ctx context.Context, method, path string, body io.Reader, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, k.server+"/"+path, body)
	if err != nil {
		return err
	}

	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}

	resp, err := k.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return ue.Err
		}

		return err
	}
	defer resp.Body.Close()

	switch {
	case resp.StatusCode == http.StatusNotFound:
		return errNotFound
	case resp.StatusCode/100 == 2 && v != nil:
		return json.NewDecoder(resp.Body).Decode(v)
	case resp.StatusCode/100 == 2:
		return nil
	}

	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))

	return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(msg)))
}

type kubeNode struct {
	Metadata struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool `json:"unschedulable"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

func (n kubeNode) ready() bool {
	return slices.ContainsFunc(n.Status.Conditions, func(c struct {
		Type   string `json:"type"`
		Status string `json:"status"`
	}) bool {
		return c.Type == "Ready" && c.Status == "True"
	})
}

func nodes(ctx context.Context, s *session) ([]kubeNode, error) {
	k, err := s.kube(ctx)
	if err != nil {
		return nil, err
	}

	var list struct {
		Items []kubeNode `json:"items"`
	}

	if err := k.get(ctx, "api/v1/nodes", &list); err != nil {
		return nil, err
	}

	return list.Items, nil
}

func checkKubelet(ctx context.Context, s *session) error {
	return eachServiceList(ctx, s, func(l *machine.ServiceList) error {
		for _, svc := range l.GetServices() {
			if svc.GetId() == "kubelet" {
				if svc.GetState() == "Running" && svc.GetHealth().GetHealthy() {
					return nil
				}

				return fmt.Errorf("kubelet is %s: %s", svc.GetState(), svc.GetHealth().GetLastMessage())
			}
		}

		return errors.New("no kubelet service")
	})
}

func checkNodesReport(ctx context.Context, s *session) error {
	ns, err := nodes(ctx, s)
	if err != nil {
		return err
	}

	if len(ns) < len(s.nodes) {
		names := make([]string, len(ns))
		for i, n := range ns {
			names[i] = n.Metadata.Name
		}

		return fmt.Errorf("expected %d nodes, %d reported: [%s]", len(s.nodes), len(ns), strings.Join(names, " "))
	}

	return nil
}

func checkNodesReady(ctx context.Context, s *session) error {
	ns, err := nodes(ctx, s)
	if err != nil {
		return err
	}

	var notReady []string

	for _, n := range ns {
		if !n.ready() {
			notReady = append(notReady, n.Metadata.Name)
		}
	}

	if len(notReady) > 0 {
		return fmt.Errorf("some nodes are not ready: [%s]", strings.Join(notReady, " "))
	}

	return nil
}

func checkSchedulable(ctx context.Context, s *session) error {
	ns, err := nodes(ctx, s)
	if err != nil {
		return err
	}

	for _, n := range ns {
		if n.Spec.Unschedulable {
			return fmt.Errorf("node %s is not schedulable", n.Metadata.Name)
		}
	}

	return nil
}

// checkStaticPods wants each control-plane component's pod on every
// control-plane node, running (or ready).
func checkStaticPods(ready bool) func(context.Context, *session) error {
	return func(ctx context.Context, s *session) error {
		k, err := s.kube(ctx)
		if err != nil {
			return err
		}

		var list struct {
			Items []struct {
				Metadata struct {
					Name   string            `json:"name"`
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
				Status struct {
					Phase      string `json:"phase"`
					Conditions []struct {
						Type   string `json:"type"`
						Status string `json:"status"`
					} `json:"conditions"`
				} `json:"status"`
			} `json:"items"`
		}

		if err := k.get(ctx, "api/v1/namespaces/kube-system/pods?labelSelector=tier%3Dcontrol-plane", &list); err != nil {
			return err
		}

		count := map[string]int{}

		var bad []string

		for _, p := range list.Items {
			app := p.Metadata.Labels["k8s-app"]
			ok := p.Status.Phase == "Running"

			if ready {
				ok = slices.ContainsFunc(p.Status.Conditions, func(c struct {
					Type   string `json:"type"`
					Status string `json:"status"`
				}) bool {
					return c.Type == "Ready" && c.Status == "True"
				})
			}

			if ok {
				count[app]++
			} else {
				bad = append(bad, fmt.Sprintf("%s (%s)", p.Metadata.Name, p.Status.Phase))
			}
		}

		for _, app := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler"} {
			if count[app] < len(s.controlPlanes) {
				return fmt.Errorf("expected %d %s pods ready, have %d; not ready: [%s]", len(s.controlPlanes), app, count[app], strings.Join(bad, " "))
			}
		}

		return nil
	}
}

// checkWorkload wants a DaemonSet or Deployment fully ready; one that is
// not deployed (disabled in the config) is skipped, and says so.
func checkWorkload(path string) func(context.Context, *session) error {
	return func(ctx context.Context, s *session) error {
		k, err := s.kube(ctx)
		if err != nil {
			return err
		}

		var w struct {
			Status struct {
				Desired       int `json:"desiredNumberScheduled"`
				NumberReady   int `json:"numberReady"`
				Replicas      int `json:"replicas"`
				ReadyReplicas int `json:"readyReplicas"`
			} `json:"status"`
		}

		err = k.get(ctx, path, &w)
		if errors.Is(err, errNotFound) {
			return errSkipped
		}

		if err != nil {
			return err
		}

		want, have := w.Status.Desired, w.Status.NumberReady
		if strings.Contains(path, "/deployments/") {
			want, have = w.Status.Replicas, w.Status.ReadyReplicas
		}

		if want == 0 || have < want {
			return fmt.Errorf("expected %d ready, have %d", want, have)
		}

		return nil
	}
}

// errNoAdmin: only admins get a kubeconfig.
var errNoAdmin = errors.New("getting a kubeconfig needs the os:admin role")

// errSkipped marks a check that does not apply; waitCheck says so.
var errSkipped = errors.New("not deployed")

// skip is a check that does not apply, and why: waitCheck prints
// "skipped (why)".
type skip string

func (s skip) Error() string        { return string(s) }
func (s skip) Is(target error) bool { return target == errSkipped }
