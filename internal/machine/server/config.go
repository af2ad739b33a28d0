package server

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/api/machine"
	imachine "github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/role"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

var applyModes = map[machine.ApplyConfigurationRequest_Mode]imachine.ApplyMode{
	machine.ApplyConfigurationRequest_REBOOT:    imachine.ModeReboot,
	machine.ApplyConfigurationRequest_AUTO:      imachine.ModeAuto,
	machine.ApplyConfigurationRequest_NO_REBOOT: imachine.ModeNoReboot,
	machine.ApplyConfigurationRequest_STAGED:    imachine.ModeStaged,
	machine.ApplyConfigurationRequest_TRY:       imachine.ModeTry,
}

// ApplyConfiguration hands the config to the node in the mode asked for.
// A config that does not decode or validate is InvalidArgument; one the
// node cannot take now (fields needing a reboot in no-reboot mode, a node
// still booting) is FailedPrecondition. The node's message is kept.
func (m *machineServer) ApplyConfiguration(ctx context.Context, req *machine.ApplyConfigurationRequest) (*machine.ApplyConfigurationResponse, error) {
	mode, ok := applyModes[req.GetMode()]
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "apply config: unknown mode %v", req.GetMode())
	}

	opts := imachine.ApplyOptions{Mode: mode, DryRun: req.GetDryRun()}
	if d := req.GetTryModeTimeout(); d != nil {
		if err := d.CheckValid(); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "apply config: try_mode_timeout: %v", err)
		}

		opts.TryTimeout = d.AsDuration()
	}

	res, err := m.node.ApplyConfiguration(ctx, req.GetData(), opts)
	if err != nil {
		return nil, applyError(ctx, err)
	}

	details := res.Message
	if req.GetDryRun() && res.Diff != "" {
		details += "\n\nConfig diff:\n\n" + res.Diff
	}

	return &machine.ApplyConfigurationResponse{Messages: []*machine.ApplyConfiguration{{
		Warnings:    res.Warnings,
		Mode:        modeOf(res.Mode),
		ModeDetails: details,
	}}}, nil
}

func modeOf(m imachine.ApplyMode) machine.ApplyConfigurationRequest_Mode {
	for k, v := range applyModes {
		if v == m {
			return k
		}
	}

	return machine.ApplyConfigurationRequest_AUTO
}

func applyError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return status.FromContextError(ctx.Err()).Err()
	}

	var (
		errs *configs.Errors
		dec  *configs.DecodeError
		val  *configs.ValidationError
	)

	if errors.As(err, &errs) || errors.As(err, &dec) || errors.As(err, &val) {
		return status.Error(codes.InvalidArgument, err.Error())
	}

	return status.Error(codes.FailedPrecondition, err.Error())
}

// Client certificates GenerateClientConfiguration issues live at most this
// long (ten years, the CA's own validity).
const maxClientTTL = pki.CAValidity

// GenerateClientConfiguration issues a client certificate for the roles
// asked for (os:admin by default), signed by the OS CA, and a talosconfig
// holding it.
func (m *machineServer) GenerateClientConfiguration(_ context.Context, req *machine.GenerateClientConfigurationRequest) (*machine.GenerateClientConfigurationResponse, error) {
	cfg := m.node.Config()
	if cfg == nil || cfg.Machine == nil || cfg.Machine.CA == nil || len(cfg.Machine.CA.Key) == 0 {
		return nil, status.Error(codes.FailedPrecondition, "generate client configuration: this node holds no OS CA key")
	}

	roles := req.GetRoles()
	if len(roles) == 0 {
		roles = []string{string(role.Admin)}
	}

	for _, r := range roles {
		switch {
		case role.Role(r) == role.Impersonator:
			return nil, status.Errorf(codes.InvalidArgument, "generate client configuration: role %q is reserved for apid", r)
		case !slices.Contains(role.Known, role.Role(r)):
			return nil, status.Errorf(codes.InvalidArgument, "generate client configuration: unknown role %q (known: %s)", r, role.Format(role.Without(role.Known, role.Impersonator)))
		}
	}

	ttl := pki.ClientCertValidity
	if d := req.GetCrtTtl(); d != nil {
		if err := d.CheckValid(); err != nil || d.AsDuration() <= 0 || d.AsDuration() > maxClientTTL {
			return nil, status.Errorf(codes.InvalidArgument, "generate client configuration: crt_ttl must be positive and at most %s", maxClientTTL)
		}

		ttl = d.AsDuration()
	}

	ca := &pki.CertAndKey{Crt: cfg.Machine.CA.Crt, Key: cfg.Machine.CA.Key}

	crt, err := pki.NewClientCertificate(ca, pki.ClientOptions{Roles: roles, TTL: ttl})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "generate client configuration: %v", err)
	}

	name := "talos"
	if cfg.Cluster != nil && cfg.Cluster.ClusterName != "" {
		name = cfg.Cluster.ClusterName
	}

	tc, err := talosconfig.New(name, endpoints(cfg.Machine.CertSANs), ca.Crt, crt).Bytes()
	if err != nil {
		return nil, status.Errorf(codes.Internal, "generate client configuration: %v", err)
	}

	return &machine.GenerateClientConfigurationResponse{Messages: []*machine.GenerateClientConfiguration{{
		Ca:          ca.Crt,
		Crt:         crt.Crt,
		Key:         crt.Key,
		Talosconfig: tc,
	}}}, nil
}

// endpoints are where a client can reach this node: its global unicast
// addresses and certSANs, or loopback when it has none.
func endpoints(certSANs []string) []string {
	var out []string

	for _, ip := range imachine.LocalAddresses() {
		if ip.IsGlobalUnicast() && !slices.Contains(out, ip.String()) {
			out = append(out, ip.String())
		}
	}

	for _, san := range certSANs {
		if !slices.Contains(out, san) && !strings.ContainsAny(san, "*") {
			out = append(out, san)
		}
	}

	if len(out) == 0 {
		out = []string{net.IPv4(127, 0, 0, 1).String()}
	}

	return out
}
