package networkd

import (
	"context"
	"fmt"
	"time"

	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/network"
	networkres "github.com/talosbox/talosbox/internal/resources/network"
)

// quiet is how long the bus must stay still before --once judges the
// result: the pipeline is several controllers deep, and each hop is an
// event, so stillness plus convergence means the pass is complete.
const quiet = 200 * time.Millisecond

// watched are the kinds whose changes mean networkd is still working.
var watched = []string{
	networkres.LinkSpecType, networkres.AddressSpecType, networkres.RouteSpecType, networkres.HostnameSpecType,
	networkres.LinkStatusType, networkres.AddressStatusType, networkres.RouteStatusType, networkres.HostnameStatusType,
	networkres.EtcFileStatusType, networkres.ApplyIssueType, networkres.NetworkStatusType, networkres.OperatorSpecType,
}

// once waits until the network settled (or the timeout passed), prints
// the status and exits 1 when anything could not be applied.
func once(ctx context.Context, store *bus.Store, o options, env applet.Env) int {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	changed := make(chan struct{}, 1)

	for _, typ := range watched {
		w, err := store.WatchKind(ctx, bus.Kind{Namespace: networkres.Namespace, Type: typ})
		if err != nil {
			fmt.Fprintf(env.Stderr, "networkd: %v\n", err)
			return 1
		}
		defer w.Close()

		go func() {
			for range w.Events() {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
		}()
	}

	timer := time.NewTimer(quiet)
	defer timer.Stop()

	for settled := false; !settled; {
		select {
		case <-ctx.Done():
			fmt.Fprintf(env.Stderr, "networkd: the network did not settle within %s\n", o.timeout)
			return report(store, env, 1)
		case <-changed:
			timer.Reset(quiet)
		case <-timer.C:
			settled = converged(store, o.etcDir != "")
			if !settled {
				timer.Reset(quiet)
			}
		}
	}

	return report(store, env, 0)
}

// report prints the NetworkStatus and turns its issues into the exit code.
func report(store *bus.Store, env applet.Env, code int) int {
	st, err := bus.GetAs[*networkres.NetworkStatus](context.Background(), store, statusPointer())
	if err != nil {
		fmt.Fprintf(env.Stderr, "networkd: no network status: %v\n", err)
		return 1
	}

	printStatus(env.Stdout, st.TypedSpec())

	if len(st.TypedSpec().Issues) > 0 {
		for _, is := range st.TypedSpec().Issues {
			fmt.Fprintf(env.Stderr, "networkd: could not apply %s\n", is)
		}

		return 1
	}

	return code
}

// converged reports whether every merged spec is either in effect (a
// matching status) or has an ApplyIssue explaining why not.
func converged(store *bus.Store, etc bool) bool {
	ctx := context.Background()
	has := func(typ, id string) bool {
		_, err := store.Get(ctx, bus.Pointer{Namespace: networkres.Namespace, Type: typ, ID: id})
		return err == nil
	}
	issue := func(id string) bool { return has(networkres.ApplyIssueType, id) }

	if !has(networkres.NetworkStatusType, networkres.NetworkStatusID) || !has(networkres.HostnameStatusType, networkres.HostnameID) {
		return false
	}

	if etc && !(has(networkres.EtcFileStatusType, network.HostsFile) && has(networkres.EtcFileStatusType, network.ResolvFile)) && !issue("etcfile/"+network.HostsFile) {
		return false
	}

	links, _ := bus.ListAs[*networkres.LinkSpec](ctx, store, bus.Kind{Namespace: networkres.Namespace, Type: networkres.LinkSpecType}) //nolint:errcheck // empty on error
	for _, l := range links {
		spec := l.TypedSpec()

		st, err := bus.GetAs[*networkres.LinkStatus](ctx, store, bus.Pointer{Namespace: networkres.Namespace, Type: networkres.LinkStatusType, ID: spec.Name})
		inEffect := err == nil && (!spec.Up || st.TypedSpec().Up) && (spec.MTU == 0 || st.TypedSpec().MTU == int(spec.MTU))

		if !inEffect && !issue("link/"+spec.Name) {
			return false
		}
	}

	addrs, _ := bus.ListAs[*networkres.AddressSpec](ctx, store, bus.Kind{Namespace: networkres.Namespace, Type: networkres.AddressSpecType}) //nolint:errcheck
	for _, a := range addrs {
		if id := a.Metadata().ID; !has(networkres.AddressStatusType, id) && !issue("address/"+id) {
			return false
		}
	}

	// A DHCP operator has done its part once an address of its lease is
	// merged (the loop above checked it is in effect), or once it has an
	// issue saying why not; until then --once waits, up to --timeout.
	ops, _ := bus.ListAs[*networkres.OperatorSpec](ctx, store, bus.Kind{Namespace: networkres.Namespace, Type: networkres.OperatorSpecType}) //nolint:errcheck
	for _, op := range ops {
		spec := op.TypedSpec()
		if spec.Operator == networkres.OperatorDHCP4 && !leased(addrs, spec.LinkName) && !issue("operator/"+op.Metadata().ID) {
			return false
		}
	}

	routes, _ := bus.ListAs[*networkres.RouteSpec](ctx, store, bus.Kind{Namespace: networkres.Namespace, Type: networkres.RouteSpecType}) //nolint:errcheck
	for _, r := range routes {
		if id := r.Metadata().ID; !has(networkres.RouteStatusType, id) && !issue("route/"+id) {
			return false
		}
	}

	return true
}

// leased reports whether an operator (DHCP) put an address on link.
func leased(addrs []*networkres.AddressSpec, link string) bool {
	for _, a := range addrs {
		if spec := a.TypedSpec(); spec.LinkName == link && spec.Layer == networkres.LayerOperator {
			return true
		}
	}

	return false
}
