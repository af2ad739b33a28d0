package network

import (
	"context"
	"log/slog"

	"github.com/talosbox/talosbox/internal/resources/network"
)

// Operator is the hook for the DHCP client (and later the VIP keeper): a
// long-running actor on one link whose results networkd publishes at the
// operator layer, between platform and configuration. It is Talos's
// operator contract.
//
// Run is started once per OperatorSpec, when the link is up if the spec
// asks for that, and runs until ctx ends (the spec went away or changed,
// the link went down, or networkd stops); it must release its lease and
// return then. Whenever its results change it calls notify (cheap,
// non-blocking, safe from any goroutine), after which networkd calls the
// getters, from another goroutine: they must be safe for concurrent use
// and return copies. The getters' Layer fields are ignored (set to
// LayerOperator); an address or route must name its link.
type Operator interface {
	Run(ctx context.Context, notify func())

	AddressSpecs() []network.AddressSpecSpec
	RouteSpecs() []network.RouteSpecSpec
	HostnameSpecs() []network.HostnameSpecSpec
	ResolverSpecs() []network.ResolverSpecSpec
	TimeServerSpecs() []network.TimeServerSpecSpec
}

// OperatorEnv is what an operator may need from networkd.
type OperatorEnv struct {
	// NetNSPath is the network namespace to open sockets in ("" is the
	// process's own); InNetNS runs fn on a thread inside it.
	NetNSPath string
	InNetNS   func(fn func() error) error
	Logger    *slog.Logger
}

// OperatorFactory builds the operator for a spec. It returns (nil, nil)
// for an operator it does not implement, which networkd reports as a
// pending ApplyIssue rather than an error.
type OperatorFactory func(spec network.OperatorSpecSpec, env OperatorEnv) (Operator, error)

// LinkSettings is implemented by operators that learn settings of their
// link, such as the MTU a DHCP server hands out. They are published at the
// operator layer, where the configuration still wins for what it sets.
type LinkSettings interface {
	LinkSpecs() []network.LinkSpecSpec
}
