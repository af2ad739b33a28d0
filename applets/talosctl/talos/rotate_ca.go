package talos

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/talosbox/talosbox/applets/talosctl/global"
	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/api/resource"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/talosconfig"
)

type rotateFlags struct {
	dryRun, talos, kubernetes bool
	controlPlanes, workers    []string
	output                    string
}

// NewRotateCACommand is `talosctl rotate-ca`, Talos's flow for the Talos
// API CA: the new CA is accepted everywhere, then issues (the old one
// accepted), then the old one is dropped; connectivity is checked with
// the old, an intermediate and the new client certificate between steps,
// so no node is ever unreachable with the talosconfig in use. Dry run is
// the default, as in Talos.
func NewRotateCACommand(g *global.Args) *cobra.Command {
	var f rotateFlags

	cmd := &cobra.Command{
		Use:   "rotate-ca",
		Short: "Rotate cluster CAs (Talos and Kubernetes APIs).",
		Long: `The command rotates the Talos API root CA (machine.ca): it generates a new CA,
makes every node accept it, makes it the issuing CA (keeping the old one accepted),
then drops the old one, checking that every node answers between the steps.
The talosconfig's current context gets the new CA and a new admin certificate.

It runs in dry-run mode unless --dry-run=false is given.

The nodes come from --control-plane-nodes and --worker-nodes, or else from -n,
each node's role read from its machine type.

The Kubernetes API CA (cluster.ca) goes through the same three steps; each
node's kubelet follows (restarted, and bootstrapped again once its client
certificate's CA is dropped), and the control plane's certificates are
reissued. Kubernetes clients need a kubeconfig of the new CA afterwards
(talosctl kubeconfig).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !f.talos && !f.kubernetes {
				return errors.New("nothing to rotate: --talos=false and --kubernetes=false")
			}

			return g.WithSession(false, func(s *global.Session) error {
				r := &rotator{g: g, s: s, flags: f, out: cmd.OutOrStdout()}

				return r.run(cmd.Context())
			})
		},
	}

	fl := cmd.Flags()
	fl.BoolVar(&f.dryRun, "dry-run", true, "dry-run mode (no changes to the cluster)")
	fl.BoolVar(&f.talos, "talos", true, "rotate Talos API CA")
	fl.BoolVar(&f.kubernetes, "kubernetes", true, "rotate Kubernetes API CA")
	fl.StringSliceVar(&f.controlPlanes, "control-plane-nodes", nil, "specify IPs of control plane nodes")
	fl.StringSliceVar(&f.workers, "worker-nodes", nil, "specify IPs of worker nodes")
	fl.StringVarP(&f.output, "output", "o", "", "path to the output new talosconfig (the talosconfig in use when empty)")

	return cmd
}

// caSection is one CA the command rotates: where it is in the machine
// config, and the old and new one.
type caSection struct {
	name string // Talos or Kubernetes
	path string // /machine or /cluster
	get  func(cfg *configs.Config) (*configs.PEMCertificateAndKey, []configs.PEMCertificate)

	current []byte
	next    *pki.CertAndKey
}

type rotator struct {
	g     *global.Args
	s     *global.Session
	flags rotateFlags
	out   io.Writer

	cfg         *talosconfig.Config
	contextName string
	endpoints   []string
	// talos is the Talos API CA; newClient the admin certificate of its
	// new CA.
	talos     caSection
	newClient *pki.CertAndKey

	controlPlanes, workers []string

	// afterPatch, when set, runs after each node's patch (with the
	// node's control-plane secrets version from before it).
	afterPatch func(ctx context.Context, c *client.Client, node string, controlPlane bool, before string) error
}

func (r *rotator) printf(format string, args ...any) { fmt.Fprintf(r.out, format, args...) }

// run rotates the Talos CA, then the Kubernetes CA through the new
// Talos PKI, as Talos does.
func (r *rotator) run(ctx context.Context) error {
	if err := r.setup(ctx); err != nil {
		return err
	}

	api := r.s.Shared

	if r.flags.talos {
		rotated, err := r.rotateTalos(ctx)
		if err != nil {
			return err
		}

		if rotated != nil {
			defer rotated.Close() //nolint:errcheck

			api = rotated
		}
	}

	if r.flags.kubernetes {
		return r.rotateKubernetes(ctx, api)
	}

	return nil
}

// rotateTalos rotates the Talos API CA; the client of the new PKI is
// returned (nil in a dry run).
func (r *rotator) rotateTalos(ctx context.Context) (*client.Client, error) {
	if err := r.setupTalos(); err != nil {
		return nil, err
	}

	r.printf("> Starting Talos API PKI rotation, dry-run mode %v...\n", r.flags.dryRun)
	r.printf("> Using config context: %q\n", r.contextName)
	r.printf("> Using Talos API endpoints: %q\n", r.endpoints)
	r.printTopology()
	r.printf("> Current Talos CA:\n%s", indent(r.talos.current))
	r.printf("> New Talos CA:\n%s", indent(r.talos.next.Crt))

	current := r.s.Shared

	// The intermediate client trusts both CAs: while the CAs are swapped
	// node by node, a node (the endpoint among them) may already serve a
	// certificate of the new CA.
	intermediate, err := r.client(append(append(bytes.Clone(r.talos.current), '\n'), r.talos.next.Crt...), r.newClient)
	if err != nil {
		return nil, err
	}
	defer intermediate.Close() //nolint:errcheck

	rotated, err := r.client(r.talos.next.Crt, r.newClient)
	if err != nil {
		return nil, err
	}

	steps := []func(ctx context.Context) error{
		r.verifyTalos(current, "existing PKI"),
		r.step(current, &r.talos, "> Adding new Talos CA as accepted...", addNewAccepted),
		r.verifyTalos(intermediate, "new client cert, but old server CA"),
		r.step(intermediate, &r.talos, "> Making new Talos CA the issuing CA, old Talos CA the accepted CA...", swapCAs),
		r.verifyTalos(rotated, "new PKI"),
		r.step(rotated, &r.talos, "> Removing old Talos CA from the accepted CAs...", dropOld),
		r.verifyTalos(rotated, "new PKI"),
	}

	for _, st := range steps {
		if err := st(ctx); err != nil {
			rotated.Close() //nolint:errcheck

			return nil, err
		}
	}

	if err := r.saveTalosconfig(); err != nil {
		rotated.Close() //nolint:errcheck

		return nil, err
	}

	if r.flags.dryRun {
		rotated.Close() //nolint:errcheck

		return nil, nil
	}

	return rotated, nil
}

func (r *rotator) printTopology() {
	r.printf("> Cluster topology:\n")
	r.printf("  - control plane nodes: %q\n", r.controlPlanes)
	r.printf("  - worker nodes: %q\n", r.workers)
}

// setup reads the talosconfig and sorts the nodes into control planes
// and workers.
func (r *rotator) setup(ctx context.Context) error {
	var err error

	if r.cfg, err = r.g.LoadTalosconfig(); err != nil {
		return err
	}

	name, tctx, err := r.cfg.Current(r.g.Context)
	if err != nil {
		return fmt.Errorf("talosconfig: %w", err)
	}

	r.contextName = name

	r.endpoints = r.g.Endpoints
	if len(r.endpoints) == 0 {
		r.endpoints = tctx.Endpoints
	}

	r.talos = caSection{name: "Talos", path: "/machine", get: func(cfg *configs.Config) (*configs.PEMCertificateAndKey, []configs.PEMCertificate) {
		return cfg.Machine.CA, cfg.Machine.AcceptedCAs
	}}

	if r.talos.current, _, err = tctx.Credentials(); err != nil {
		return fmt.Errorf("talosconfig: %w", err)
	}

	r.controlPlanes, r.workers = r.flags.controlPlanes, r.flags.workers
	if len(r.controlPlanes)+len(r.workers) > 0 {
		return nil
	}

	if len(r.s.Nodes) == 0 {
		return errors.New("no nodes: give --control-plane-nodes and --worker-nodes, or -n")
	}

	for _, node := range r.s.Nodes {
		resp, err := r.s.Shared.Resource.Get(client.WithNode(ctx, node), &resource.GetRequest{Type: config.MachineTypeType, Id: config.MachineTypeID})
		if err != nil {
			return fmt.Errorf("machine type of %s: %w", node, err)
		}

		spec := string(resp.GetResource().GetSpecYaml())
		if strings.Contains(spec, "controlplane") || strings.Contains(spec, "machineType: init") {
			r.controlPlanes = append(r.controlPlanes, node)
		} else {
			r.workers = append(r.workers, node)
		}
	}

	if len(r.controlPlanes) == 0 {
		return errors.New("no control plane node among the nodes: rotate-ca needs one (its config holds the CAs)")
	}

	return nil
}

// setupTalos makes the new Talos CA and its admin certificate.
func (r *rotator) setupTalos() error {
	var err error

	if r.talos.next, err = pki.NewCA(pki.CAOptions{Organization: "talos", KeyType: pki.Ed25519}); err != nil {
		return err
	}

	r.newClient, err = pki.NewClientCertificate(r.talos.next, pki.ClientOptions{Roles: []string{pki.RoleAdmin}})

	return err
}

func (r *rotator) client(ca []byte, pair *pki.CertAndKey) (*client.Client, error) {
	return client.New(client.Options{Endpoints: r.endpoints, CA: ca, Crt: pair.Crt, Key: pair.Key})
}

// verifyTalos calls Version on every node, retrying for a while: a node's
// API restarts when its trust changes.
func (r *rotator) verifyTalos(c *client.Client, label string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		r.printf("> Verifying connectivity with %s:\n", label)

		for _, node := range slices.Concat(r.controlPlanes, r.workers) {
			if r.flags.dryRun {
				r.printf("  - %s: OK (dry-run)\n", node)

				continue
			}

			var resp *machine.VersionResponse

			err := retryFor(ctx, 30*time.Second, func() (err error) {
				callCtx, cancel := context.WithTimeout(client.WithNode(ctx, node), 5*time.Second)
				defer cancel()

				resp, err = c.Machine.Version(callCtx, &emptypb.Empty{})

				return err
			})
			if err != nil {
				return fmt.Errorf("error calling version API on node %s: %w", node, err)
			}

			tag := ""
			if m := resp.GetMessages(); len(m) > 0 {
				tag = m[0].GetVersion().GetTag()
			}

			r.printf("  - %s: OK (version %s)\n", node, tag)
		}

		return nil
	}
}

// retryFor calls fn until it succeeds, ctx ends or the time is up; the
// last error is returned.
func retryFor(ctx context.Context, limit time.Duration, fn func() error) error {
	deadline := time.Now().Add(limit)

	for {
		err := fn()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}

		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// caChange is one step's change to a CA section: the accepted CAs and,
// when it changes, the CA (its key only on control planes).
type caChange func(sec *caSection, ca *configs.PEMCertificateAndKey, accepted []configs.PEMCertificate, controlPlane bool) ([]configs.PEMCertificate, *configs.PEMCertificateAndKey)

// step patches every node's config through c with change, control
// planes first (they issue the certificates workers ask trustd for, and
// run the Kubernetes control plane).
func (r *rotator) step(c *client.Client, sec *caSection, title string, change caChange) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		r.printf("%s\n", title)

		for _, group := range []struct {
			nodes        []string
			controlPlane bool
		}{{r.controlPlanes, true}, {r.workers, false}} {
			for _, node := range group.nodes {
				if r.flags.dryRun {
					r.printf("  - %s: skipped (dry-run)\n", node)

					continue
				}

				before := ""
				if r.afterPatch != nil && group.controlPlane {
					before = secretsVersion(ctx, c, node)
				}

				if err := r.patchNode(ctx, c, node, group.controlPlane, sec, change); err != nil {
					return fmt.Errorf("error patching node %s: %w", node, err)
				}

				if r.afterPatch != nil {
					if err := r.afterPatch(ctx, c, node, group.controlPlane, before); err != nil {
						return fmt.Errorf("node %s: %w", node, err)
					}
				}

				r.printf("  - %s: OK\n", node)
			}
		}

		return nil
	}
}

func (r *rotator) patchNode(ctx context.Context, c *client.Client, node string, controlPlane bool, sec *caSection, change caChange) error {
	ctx = client.WithNode(ctx, node)

	current, err := c.MachineConfig(ctx)
	if err != nil {
		return err
	}

	cfg, err := configs.Decode(current)
	if err != nil {
		return fmt.Errorf("the node's machine config: %w", err)
	}

	if cfg.Machine == nil || cfg.Cluster == nil {
		return errors.New("the node's machine config has no machine or cluster section")
	}

	oldCA, oldAccepted := sec.get(cfg)
	if oldCA == nil {
		return fmt.Errorf("the node's machine config has no %s CA", sec.name)
	}

	accepted, ca := change(sec, oldCA, oldAccepted, controlPlane)

	patchJSON, err := json.Marshal(caOps(cfg, sec, oldCA, ca, accepted, controlPlane))
	if err != nil {
		return err
	}

	patches, err := configpatch.Parse(patchJSON)
	if err != nil {
		return err
	}

	patched, err := configpatch.Apply(current, patches...)
	if err != nil {
		return err
	}

	resp, err := c.Machine.ApplyConfiguration(ctx, &machine.ApplyConfigurationRequest{Data: patched, Mode: machine.ApplyConfigurationRequest_NO_REBOOT})
	if err != nil {
		return err
	}

	for _, m := range resp.GetMessages() {
		if err := client.MetadataError(m.GetMetadata()); err != nil {
			return err
		}
	}

	return nil
}

func pemList(certs []configs.PEMCertificate) []map[string]string {
	out := make([]map[string]string, 0, len(certs))
	for _, c := range certs {
		out = append(out, map[string]string{"crt": base64.StdEncoding.EncodeToString(c.Crt)})
	}

	return out
}

func addNewAccepted(sec *caSection, _ *configs.PEMCertificateAndKey, accepted []configs.PEMCertificate, _ bool) ([]configs.PEMCertificate, *configs.PEMCertificateAndKey) {
	return withAccepted(accepted, sec.next.Crt), nil
}

func swapCAs(sec *caSection, _ *configs.PEMCertificateAndKey, accepted []configs.PEMCertificate, controlPlane bool) ([]configs.PEMCertificate, *configs.PEMCertificateAndKey) {
	ca := &configs.PEMCertificateAndKey{Crt: sec.next.Crt}
	if controlPlane {
		ca.Key = sec.next.Key
	}

	return without(withAccepted(accepted, sec.current), sec.next.Crt), ca
}

func dropOld(sec *caSection, _ *configs.PEMCertificateAndKey, accepted []configs.PEMCertificate, _ bool) ([]configs.PEMCertificate, *configs.PEMCertificateAndKey) {
	return without(accepted, sec.current), nil
}

func withAccepted(list []configs.PEMCertificate, crt []byte) []configs.PEMCertificate {
	if slices.ContainsFunc(list, func(c configs.PEMCertificate) bool { return bytes.Equal(c.Crt, crt) }) {
		return list
	}

	return append(slices.Clone(list), configs.PEMCertificate{Crt: crt})
}

func without(list []configs.PEMCertificate, crt []byte) []configs.PEMCertificate {
	return slices.DeleteFunc(slices.Clone(list), func(c configs.PEMCertificate) bool { return bytes.Equal(c.Crt, crt) })
}

// saveTalosconfig puts the new CA and admin certificate in the context
// that was used (or writes the talosconfig to --output).
func (r *rotator) saveTalosconfig() error {
	if r.flags.dryRun {
		return nil
	}

	_, tctx, err := r.cfg.Current(r.g.Context)
	if err != nil {
		return err
	}

	tctx.CA = base64.StdEncoding.EncodeToString(r.talos.next.Crt)
	tctx.Crt = base64.StdEncoding.EncodeToString(r.newClient.Crt)
	tctx.Key = base64.StdEncoding.EncodeToString(r.newClient.Key)

	path := r.flags.output
	if path == "" {
		if path, err = r.g.TalosconfigPath(); err != nil {
			return err
		}
	}

	if err := r.cfg.Save(path); err != nil {
		return err
	}

	r.printf("> Writing new talosconfig to %s\n", path)

	return nil
}

func indent(pemText []byte) string {
	var b strings.Builder
	for line := range strings.SplitSeq(strings.TrimSpace(string(pemText)), "\n") {
		b.WriteString("  " + line + "\n")
	}

	return b.String()
}
