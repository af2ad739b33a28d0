package check

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/cluster/kubernetes"
)

// PollInterval paces a check's retries.
const PollInterval = time.Second

// Check is one condition the cluster is waited for.
type Check struct {
	Name string
	// Run returns nil when the condition is met, else why not; an error
	// matching ErrSkipped means it does not apply.
	Run func(ctx context.Context, c *Cluster) error
	// Etcd marks the checks of the control planes' etcd, skipped when no
	// node runs it.
	Etcd bool
}

// ErrSkipped marks a check that does not apply; Wait says so.
var ErrSkipped = errors.New("not deployed")

// Skip is a check that does not apply, and why: Wait prints
// "skipped (why)".
type Skip string

func (s Skip) Error() string        { return string(s) }
func (s Skip) Is(target error) bool { return target == ErrSkipped }

// NodeChecks are the node API's checks, run in order; the etcd ones look
// at the control planes only.
var NodeChecks = []Check{
	{"etcd to be healthy", EtcdHealthy, true},
	{"etcd members to be consistent across nodes", EtcdConsistent, true},
	{"etcd members to be control plane nodes", EtcdMembersAreControlPlanes, true},
	{"the shared IP to be held by exactly one control plane node", SharedIP, true},
	{"apid to be ready", APIReady, false},
	{"all nodes to finish boot sequence", Booted, false},
	{"all services to be up", ServicesUp, false},
}

// Run waits for every check in turn, within timeout, printing each as it
// is met: the node checks, then Kubernetes' where the cluster runs it.
func Run(ctx context.Context, out io.Writer, c *Cluster, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	if c.ControlPlanes == nil {
		cps, err := discoverControlPlanes(ctx, c)
		if err != nil {
			return err
		}

		c.ControlPlanes = cps
	}

	if len(c.ControlPlanes) == 0 {
		fmt.Fprintln(out, "skipping etcd checks: no control plane node runs etcd")
	}

	for _, chk := range NodeChecks {
		if chk.Etcd && len(c.ControlPlanes) == 0 {
			continue
		}

		if err := Wait(ctx, out, c, chk); err != nil {
			return err
		}
	}

	return runKubernetes(ctx, out, c)
}

// runKubernetes runs Kubernetes' checks where the cluster runs it: a
// cluster without kubelets, or a client that may not get a kubeconfig, is
// told so instead of failing.
func runKubernetes(ctx context.Context, out io.Writer, c *Cluster) error {
	if len(c.ControlPlanes) == 0 {
		fmt.Fprintln(out, "skipping Kubernetes checks: no control plane node known")
		return nil
	}

	kubelets := 0
	_ = eachServiceList(ctx, c, c.Nodes, func(l *machine.ServiceList) error {
		for _, svc := range l.GetServices() {
			if svc.GetId() == "kubelet" {
				kubelets++
			}
		}

		return nil
	})

	if kubelets == 0 {
		fmt.Fprintln(out, "skipping Kubernetes checks: no node runs the kubelet")
		return nil
	}

	if _, err := c.Kubernetes(ctx); errors.Is(err, kubernetes.ErrNoAdmin) {
		fmt.Fprintln(out, "skipping Kubernetes checks: getting a kubeconfig needs the os:admin role")
		return nil
	}

	for _, chk := range KubernetesChecks {
		if err := Wait(ctx, out, c, chk); err != nil {
			return err
		}
	}

	return nil
}

// Wait retries a check until it passes, printing its reason whenever it
// changes, then `waiting for NAME: OK`.
func Wait(ctx context.Context, out io.Writer, c *Cluster, chk Check) error {
	last := ""

	tick := time.NewTicker(PollInterval)
	defer tick.Stop()

	for {
		err := chk.Run(ctx, c)
		if errors.Is(err, ErrSkipped) {
			fmt.Fprintf(out, "waiting for %s: skipped (%s)\n", chk.Name, err)
			return nil
		}

		if err == nil {
			fmt.Fprintf(out, "waiting for %s: OK\n", chk.Name)
			if c.OnPass != nil {
				c.OnPass(chk.Name)
			}

			return nil
		}

		if msg := err.Error(); msg != last {
			fmt.Fprintf(out, "waiting for %s: %s\n", chk.Name, msg)
			last = msg
		}

		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: timed out: %s", chk.Name, last)
		case <-tick.C:
		}
	}
}
