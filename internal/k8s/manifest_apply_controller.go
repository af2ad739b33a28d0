package k8s

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/k8s/manifests"
	"github.com/talosbox/talosbox/internal/k8s/secrets"
	"github.com/talosbox/talosbox/internal/supervisor"
)

// ManifestApplyMutex is the etcd lock control planes take to apply the
// bootstrap manifests one at a time, as Talos names it.
const ManifestApplyMutex = "talos:v1:manifestApplyMutex"

// ManifestApplyController creates the objects of every Manifest that the
// API server lacks, once etcd is healthy (Talos's
// ManifestApplyController): GET, and CREATE what is missing; it never
// updates or deletes, so an object edited in the cluster stays as it is.
// It retries until everything is applied, and again on any change.
type ManifestApplyController struct {
	// EtcdClient is the local member's client (nil: no lock, tests).
	EtcdClient func(ctx context.Context) (*clientv3.Client, error)
	// RetryInterval paces retries while the API server comes up (5 s).
	RetryInterval time.Duration
}

// Name implements bus.Controller.
func (*ManifestApplyController) Name() string { return "k8s.ManifestApplyController" }

// Inputs implements bus.Controller.
func (*ManifestApplyController) Inputs() []bus.Input {
	return []bus.Input{
		machineConfigInput,
		{Namespace: NamespaceControlPlane, Type: ManifestType},
		{Namespace: supervisor.Namespace, Type: supervisor.ServiceType, ID: "etcd"},
	}
}

// Outputs implements bus.Controller.
func (*ManifestApplyController) Outputs() []bus.Output {
	return []bus.Output{{Type: ManifestStatusType}}
}

// Run implements bus.Controller.
func (c *ManifestApplyController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	every := c.RetryInterval
	if every == 0 {
		every = 5 * time.Second
	}

	retry := time.NewTimer(time.Hour)
	retry.Stop()

	var (
		restCfg *rest.Config
		cfgKey  string
		done    string // the manifests' versions last applied in full
	)

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

		if cfg == nil || !cfg.IsControlPlane() {
			continue
		}

		etcd, err := bus.GetAs[*supervisor.ServiceResource](ctx, r, supervisor.ServicePointer("etcd"))
		if err != nil || !etcd.TypedSpec().Healthy {
			continue
		}

		list, err := bus.ListAs[*Manifest](ctx, r, bus.Kind{Namespace: NamespaceControlPlane, Type: ManifestType})
		if err != nil {
			return err
		}

		slices.SortFunc(list, func(a, b *Manifest) int { return strings.Compare(a.Metadata().ID, b.Metadata().ID) })

		var key strings.Builder
		for _, m := range list {
			fmt.Fprintf(&key, "%s@%d ", m.Metadata().ID, m.Metadata().Version)
		}

		if key.String() == done {
			continue
		}

		if k := fmt.Sprint(cfg.Cluster.CA, cfg.Cluster.ControlPlane); restCfg == nil || k != cfgKey {
			if restCfg, err = AdminRESTConfig(cfg); err != nil {
				r.Logger().Error("apply manifests", "error", err)
				continue
			}

			cfgKey = k
		}

		applied, err := c.apply(ctx, r, restCfg, list)

		ids := make([]string, 0, len(list))
		for _, m := range list {
			if slices.Contains(applied, m.Metadata().ID) {
				ids = append(ids, m.Metadata().ID)
			}
		}

		if serr := bus.SyncOutputs(ctx, r, c.Name(), NamespaceControlPlane, ManifestStatusType,
			map[string]ManifestStatusSpec{ManifestStatusID: {ManifestsApplied: ids}}); serr != nil {
			return serr
		}

		if err != nil {
			r.Logger().Info("bootstrap manifests not applied yet, retrying", "error", err)
			retry.Reset(every)

			continue
		}

		done = key.String()

		r.ResetRestartBackoff()
	}
}

func (c *ManifestApplyController) apply(ctx context.Context, r bus.ControllerRuntime, restCfg *rest.Config, list []*Manifest) ([]string, error) {
	ms := make([]manifests.Manifest, 0, len(list))

	for _, m := range list {
		mm := manifests.Manifest{ID: m.Metadata().ID}
		for _, item := range m.TypedSpec().Items {
			mm.Objects = append(mm.Objects, &unstructured.Unstructured{Object: item})
		}

		ms = append(ms, mm)
	}

	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()

	if c.EtcdClient != nil {
		cli, err := c.EtcdClient(ctx)
		if err != nil {
			return nil, fmt.Errorf("etcd: %w", err)
		}

		sess, err := concurrency.NewSession(cli, concurrency.WithContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("etcd session: %w", err)
		}
		defer sess.Close() //nolint:errcheck // releases the lock's lease

		mu := concurrency.NewMutex(sess, ManifestApplyMutex)
		if err := mu.Lock(ctx); err != nil {
			return nil, fmt.Errorf("lock %s: %w", ManifestApplyMutex, err)
		}

		defer mu.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // the session's end releases it too
	}

	logf := func(format string, args ...any) { r.Logger().Info(fmt.Sprintf(format, args...)) }

	return manifests.Apply(ctx, restCfg, ms, logf)
}

// AdminRESTConfig is a client config for the local API server as
// talos:admin (system:masters), from the config's CA: what Talos's
// controllers use to talk to their own control plane.
func AdminRESTConfig(cfg *configs.Config) (*rest.Config, error) {
	in, err := secrets.FromConfig(cfg, "", "", nil)
	if err != nil {
		return nil, err
	}

	certs, err := secrets.IssueStaticPodCerts(in)
	if err != nil {
		return nil, err
	}

	rc, err := clientcmd.RESTConfigFromKubeConfig(certs.LocalhostAdminKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("admin kubeconfig: %w", err)
	}

	rc.Timeout = 30 * time.Second

	return rc, nil
}
