package kubernetes

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/resources/k8s"
)

// ConvertOptions are convert-k8s's settings.
type ConvertOptions struct {
	// Endpoint, when set, is the API server address to use instead of
	// the admin kubeconfig's.
	Endpoint string
	// Force answers yes to every question.
	Force bool
	// RemoveInitializedKey only releases the static pods (the manual
	// flow's step) and returns.
	RemoveInitializedKey bool
}

// Convert hands a self-hosted (bootkube) control plane over to the static
// pods the nodes render, asking on out and reading the answers from in
// before each step that cannot be undone. reach reaches the nodes' APIs;
// kube, called only when the conversion needs it, is the cluster's API
// server client.
func Convert(ctx context.Context, out io.Writer, in io.Reader, reach client.Reach, kube func(context.Context) (*Client, error), o ConvertOptions) error {
	c := &conversion{reach: reach, getKube: kube, o: o, out: out, in: bufio.NewReader(in)}

	return c.run(ctx)
}

// conversion is one run of convert-k8s.
type conversion struct {
	reach   client.Reach
	getKube func(context.Context) (*Client, error)
	o       ConvertOptions
	out     io.Writer
	in      *bufio.Reader

	kube          *Client
	controlPlanes []string
}

func (c *conversion) log(format string, args ...any) { fmt.Fprintf(c.out, format+"\n", args...) }

func (c *conversion) run(ctx context.Context) error {
	if c.o.RemoveInitializedKey {
		c.releaseStaticPods()
		return nil
	}

	var err error
	if c.kube, err = c.getKube(ctx); err != nil {
		return err
	}

	if c.o.Endpoint != "" {
		if c.kube, err = c.kube.WithServer(c.o.Endpoint); err != nil {
			return err
		}
	}

	infos, err := c.kube.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("discover nodes: %w", err)
	}

	for _, n := range infos {
		if n.ControlPlane() && n.IP != "" {
			c.controlPlanes = append(c.controlPlanes, n.IP)
		}
	}

	c.log("discovered master nodes %s", quoteList(c.controlPlanes))

	selfHosted, err := c.selfHosted(ctx)
	if err != nil {
		return err
	}

	c.log("current self-hosted status: %v", selfHosted)

	if !selfHosted {
		return nil
	}

	if err := c.checkDefinitions(ctx); err != nil {
		return err
	}

	c.log("")
	c.log("in order to remove self-hosted control plane, pod-checkpointer component needs to be disabled")
	c.log("once pod-checkpointer is disabled, the cluster shouldn't be rebooted until the entire conversion process is complete")

	if err := c.confirm("confirm disabling pod-checkpointer to proceed with control plane update"); err != nil {
		return err
	}

	if err := c.disableCheckpointer(ctx); err != nil {
		return err
	}

	if err := c.confirm("confirm applying static pod definitions and manifests"); err != nil {
		return err
	}

	c.releaseStaticPods()

	for _, component := range controlPlaneComponents {
		if err := c.waitStaticPods(ctx, component); err != nil {
			return err
		}

		c.log("deleting daemonset %q", component)

		if err := c.kube.DeleteDaemonSet(ctx, "kube-system", component); err != nil && !IsNotFound(err) {
			return fmt.Errorf("delete daemonset %q: %w", component, err)
		}

		if err := c.waitStaticPods(ctx, component); err != nil {
			return err
		}
	}

	c.log("conversion process completed successfully")

	return nil
}

// selfHosted: bootkube ran the control plane as DaemonSets in kube-system.
func (c *conversion) selfHosted(ctx context.Context) (bool, error) {
	for _, component := range controlPlaneComponents {
		_, err := c.kube.DaemonSet(ctx, "kube-system", component)
		if err == nil {
			return true, nil
		}

		if !IsNotFound(err) {
			return false, fmt.Errorf("daemonset %s: %w", component, err)
		}
	}

	return false, nil
}

// checkDefinitions: talosbox renders the static pods and manifests from
// the machine config on every control plane; the conversion goes on only
// when each control plane has them (a config without the cluster's
// secrets renders none, and would lose the control plane).
func (c *conversion) checkDefinitions(ctx context.Context) error {
	c.log("gathering control plane configuration")

	for _, node := range c.controlPlanes {
		c.log("checking master node %q configuration", node)

		if _, err := client.OnNode(ctx, c.reach, node, machineConfig); err != nil {
			return fmt.Errorf("%q: %s", node, client.Message(err))
		}
	}

	for _, w := range []struct{ what, typ string }{
		{"static pod definitions", k8s.StaticPodType},
		{"manifests", k8s.ManifestType},
	} {
		c.log("waiting for %s to be generated", w.what)

		for _, node := range c.controlPlanes {
			err := waitUntil(ctx, 2*time.Minute, func() error {
				n, err := countResources(ctx, c.reach, node, w.typ)
				if err == nil && n == 0 {
					err = fmt.Errorf("no %s on %q yet", w.what, node)
				}

				return err
			})
			if err != nil {
				return err
			}
		}
	}

	c.log("Talos generated control plane static pod definitions and bootstrap manifests, please verify them with commands:")
	c.log("    talosctl -n <master node IP> get StaticPods.talos.dev")
	c.log("    talosctl -n <master node IP> get Manifests.talos.dev")

	return nil
}

func countResources(ctx context.Context, reach client.Reach, node, typ string) (int, error) {
	return client.OnNode(ctx, reach, node, func(ctx context.Context, c *client.Client) (int, error) {
		stream, err := c.Resource.List(ctx, &resource.ListRequest{Type: typ})
		if err != nil {
			return 0, err
		}

		n := 0

		for {
			msg, err := stream.Recv()
			if errors.Is(err, io.EOF) {
				return n, nil
			}

			if err != nil {
				return 0, err
			}

			if err := client.MetadataError(msg.GetMetadata()); err != nil {
				return 0, err
			}

			if msg.GetResource() != nil {
				n++
			}
		}
	})
}

// disableCheckpointer removes bootkube's pod-checkpointer and waits until
// no checkpointed pod is left, as Talos 0.9's conversion guide's script does.
func (c *conversion) disableCheckpointer(ctx context.Context) error {
	c.log("disabling pod-checkpointer")
	c.log("deleting daemonset %q", "pod-checkpointer")

	if err := c.kube.DeleteDaemonSet(ctx, "kube-system", "pod-checkpointer"); err != nil && !IsNotFound(err) {
		return fmt.Errorf("delete daemonset pod-checkpointer: %w", err)
	}

	c.log("checking for active pod checkpoints")

	last := ""

	return waitUntil(ctx, 10*time.Minute, func() error {
		pods, err := c.kube.ComponentPods(ctx, "pod-checkpointer")
		if err != nil {
			return err
		}

		if len(pods) > 0 {
			names := make([]string, len(pods))
			for i, p := range pods {
				names[i] = p.Name
			}

			err := fmt.Errorf("found %d active pod checkpoints: %v", len(pods), names)
			if err.Error() != last {
				c.log("retrying error: %v", err)
				last = err.Error()
			}

			return err
		}

		return nil
	})
}

// releaseStaticPods is the step that removed Talos 0.9's "initialized"
// key so that its controllers rendered the static pods. talosbox renders
// them from the config always; there is no key to remove.
func (c *conversion) releaseStaticPods() {
	c.log("removing self-hosted initialized key")
	c.log(" > talosbox keeps no such key: the static pods are rendered from the machine config already")
}

// waitStaticPods waits for the component's mirror pods, one per control
// plane, Ready in the API server.
func (c *conversion) waitStaticPods(ctx context.Context, component string) error {
	c.log("waiting for static pods for %q to be present in the API server state", component)

	return waitUntil(ctx, 5*time.Minute, func() error {
		pods, err := c.kube.ComponentPods(ctx, component)
		if err != nil {
			return err
		}

		ready := map[string]bool{}

		for _, p := range pods {
			if p.Mirror() && p.Ready {
				ready[p.HostIP] = true
			}
		}

		for _, node := range c.controlPlanes {
			if !ready[node] {
				return fmt.Errorf("no ready static pod %s on %q", component, node)
			}
		}

		return nil
	})
}

// confirm asks a yes/no question; anything but yes stops the conversion.
func (c *conversion) confirm(question string) error {
	if c.o.Force {
		return nil
	}

	fmt.Fprintf(c.out, "%s [yes/no]: ", question)

	answer, err := c.in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}

	if strings.TrimSpace(strings.ToLower(answer)) != "yes" {
		return errors.New("aborted: nothing after this point was changed")
	}

	return nil
}

// waitUntil retries check every 2 s until it succeeds or timeout passes.
func waitUntil(ctx context.Context, timeout time.Duration, check func() error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()

	for {
		err := check()
		if err == nil {
			return nil
		}

		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("not within %s: %w", timeout, err)
			}

			return ctx.Err()
		case <-tick.C:
		}
	}
}
