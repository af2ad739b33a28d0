package k8s

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/talosbox/talosbox/internal/resources/k8s"
	"github.com/talosbox/talosbox/internal/resources/runtime"
	"github.com/talosbox/talosbox/internal/resources/v1alpha1"
)

// ManifestApplyMutex is the etcd lock control planes take to apply the
// bootstrap manifests one at a time, as Talos names it.
const ManifestApplyMutex = "talos:v1:manifestApplyMutex"

// ManifestApplyController applies the objects of every Manifest once etcd
// is healthy (Talos's ManifestApplyController, which only creates what is
// missing): server-side apply, so edits to the manifests roll out, and,
// with cluster.manifestsPrune, talosbox's objects that no manifest holds
// any more are deleted (see package manifests). It retries until
// everything is applied, and runs again when the manifests or the prune
// setting change. ManifestStatus says what the runs for the current
// manifests did.
type ManifestApplyController struct {
	// EtcdClient is the local member's client (nil: no lock, tests).
	EtcdClient func(ctx context.Context) (*clientv3.Client, error)
	// RetryInterval paces retries while the API server comes up (5 s).
	RetryInterval time.Duration
	// RESTConfig makes the client config for the API server from the
	// machine config (AdminRESTConfig; tests give their own server).
	RESTConfig func(*configs.Config) (*rest.Config, error)
}

// Name implements bus.Controller.
func (*ManifestApplyController) Name() string { return "k8s.ManifestApplyController" }

// Inputs implements bus.Controller.
func (*ManifestApplyController) Inputs() []bus.Input {
	return []bus.Input{
		machineConfigInput,
		{Namespace: k8s.NamespaceControlPlane, Type: k8s.ManifestType},
		{Namespace: runtime.NamespaceRuntime, Type: v1alpha1.ServiceType, ID: "etcd"},
	}
}

// Outputs implements bus.Controller.
func (*ManifestApplyController) Outputs() []bus.Output {
	return []bus.Output{{Type: k8s.ManifestStatusType}}
}

// Run implements bus.Controller.
func (c *ManifestApplyController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	every := c.RetryInterval
	if every == 0 {
		every = 5 * time.Second
	}

	restConfig := c.RESTConfig
	if restConfig == nil {
		restConfig = AdminRESTConfig
	}

	retry := time.NewTimer(time.Hour)
	retry.Stop()

	var (
		restCfg *rest.Config
		cfgKey  string
		done    string // the key of the manifests last applied in full
		runKey  string // the key the result is for
		result  manifests.Result
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

		etcd, err := bus.GetAs[*v1alpha1.Service](ctx, r, v1alpha1.ServicePointer("etcd"))
		if err != nil || !etcd.TypedSpec().Healthy {
			continue
		}

		list, err := bus.ListAs[*k8s.Manifest](ctx, r, bus.Kind{Namespace: k8s.NamespaceControlPlane, Type: k8s.ManifestType})
		if err != nil {
			return err
		}

		// No manifests, or some of an update not written yet: applying
		// now could prune what the rest still holds. The ManifestController
		// writes the rest, which wakes this controller again.
		if !completeSet(list) {
			continue
		}

		prune := cfg.Cluster != nil && cfg.Cluster.ManifestsPrune

		var key strings.Builder
		for _, m := range list {
			fmt.Fprintf(&key, "%s@%d ", m.Metadata().ID, m.Metadata().Version)
		}

		fmt.Fprintf(&key, "prune=%v", prune)

		if key.String() == done {
			continue
		}

		if k := fmt.Sprint(cfg.Cluster.CA, cfg.Cluster.ControlPlane); restCfg == nil || k != cfgKey {
			if restCfg, err = restConfig(cfg); err != nil {
				r.Logger().Error("apply manifests", "error", err)
				continue
			}

			cfgKey = k
		}

		res, err := c.apply(ctx, r, restCfg, list, prune)

		// The status covers every run for these manifests: a retry adds
		// to what the runs before it did.
		if key.String() != runKey {
			runKey, result = key.String(), manifests.Result{}
		}

		result = result.Merge(res)

		if serr := bus.SyncOutputs(ctx, r, c.Name(), k8s.NamespaceControlPlane, k8s.ManifestStatusType,
			map[string]k8s.ManifestStatusSpec{k8s.ManifestStatusID: statusOf(list, result, prune, err)}); serr != nil {
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

// completeSet says list is a whole set of manifests as the
// ManifestController rendered it: not empty, and each manifest's Set the
// digest of the IDs listed.
func completeSet(list []*k8s.Manifest) bool {
	if len(list) == 0 {
		return false
	}

	slices.SortFunc(list, func(a, b *k8s.Manifest) int { return strings.Compare(a.Metadata().ID, b.Metadata().ID) })

	ids := make([]string, len(list))
	for i, m := range list {
		ids[i] = m.Metadata().ID
	}

	set := manifestSet(ids)

	return !slices.ContainsFunc(list, func(m *k8s.Manifest) bool { return m.TypedSpec().Set != set })
}

// manifestSet is the digest of a set of manifest IDs.
func manifestSet(ids []string) string {
	ids = slices.Sorted(slices.Values(ids))
	sum := sha256.Sum256([]byte(strings.Join(ids, "\n")))

	return hex.EncodeToString(sum[:8])
}

// statusOf is the ManifestStatus of a result: the manifests applied in
// full, leaving out those that failed to render (their objects are the
// last rendered ones, not the current).
func statusOf(list []*k8s.Manifest, res manifests.Result, prune bool, err error) k8s.ManifestStatusSpec {
	st := k8s.ManifestStatusSpec{
		ManifestsApplied: []string{},
		Prune:            prune,
		ObjectsCreated:   res.Created,
		ObjectsUpdated:   res.Updated,
		ObjectsUnchanged: res.Unchanged,
		ObjectsPruned:    res.Pruned,
		ObjectsKept:      res.Kept,
		Counts: k8s.ManifestCounts{
			Created: len(res.Created), Updated: len(res.Updated), Unchanged: len(res.Unchanged),
			Pruned: len(res.Pruned), Kept: len(res.Kept),
		},
	}

	for _, m := range list {
		if m.TypedSpec().Error == "" && slices.Contains(res.Applied, m.Metadata().ID) {
			st.ManifestsApplied = append(st.ManifestsApplied, m.Metadata().ID)
		}
	}

	if err != nil {
		st.Error = err.Error()
	}

	return st
}

func (c *ManifestApplyController) apply(ctx context.Context, r bus.ControllerRuntime, restCfg *rest.Config, list []*k8s.Manifest, prune bool) (manifests.Result, error) {
	ms := make([]manifests.Manifest, 0, len(list))
	opts := manifests.ApplyOptions{Prune: prune}

	for _, m := range list {
		if m.TypedSpec().Error != "" {
			opts.Hold = append(opts.Hold, m.Metadata().ID)
		}

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
			return manifests.Result{}, fmt.Errorf("etcd: %w", err)
		}

		sess, err := concurrency.NewSession(cli, concurrency.WithContext(ctx))
		if err != nil {
			return manifests.Result{}, fmt.Errorf("etcd session: %w", err)
		}
		defer sess.Close() //nolint:errcheck // releases the lock's lease

		mu := concurrency.NewMutex(sess, ManifestApplyMutex)
		if err := mu.Lock(ctx); err != nil {
			return manifests.Result{}, fmt.Errorf("lock %s: %w", ManifestApplyMutex, err)
		}

		defer mu.Unlock(context.WithoutCancel(ctx)) //nolint:errcheck // the session's end releases it too
	}

	opts.Logf = func(format string, args ...any) { r.Logger().Info(fmt.Sprintf(format, args...)) }

	return manifests.Apply(ctx, restCfg, ms, opts)
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
