package controlplane

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/machine"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/trustd"
)

// trustdService serves certificates to workers that present machine.token,
// signed by the OS CA this control-plane node holds. machine.ca and
// machine.acceptedCAs change without a reboot (talosctl rotate-ca): the
// server follows the active config and starts again with the new trust,
// so it never issues under a CA the node no longer has.
func (p *Plane) trustdService(n *machine.Node, boot *configs.Config) supervisor.Service {
	listening := &supervisor.Listening{}

	return supervisor.Service{
		ID:     "trustd",
		Health: listening.Check(),
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, log io.Writer) error {
			w, err := n.Store().WatchKind(ctx, bus.Kind{Namespace: config.NamespaceConfig, Type: config.MachineConfigType})
			if err != nil {
				return fmt.Errorf("trustd: %w", err)
			}
			defer w.Close()

			current := func() *configs.Config {
				if cfg := n.Config(); cfg != nil && cfg.Machine != nil && cfg.Machine.CA != nil {
					return cfg
				}

				return boot
			}

			for {
				cfg := current()
				key := trustKey(cfg)

				runCtx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)

				go func() { done <- p.serveTrustd(runCtx, cfg, listening, log) }()

			watch:
				for {
					select {
					case err := <-done:
						cancel()

						return err
					case _, ok := <-w.Events():
						if !ok {
							cancel()

							return <-done
						}

						if trustKey(current()) != key {
							fmt.Fprintln(log, "trustd: machine.ca or machine.acceptedCAs changed: serving with the new ones")

							break watch
						}
					}
				}

				cancel()

				if err := <-done; err != nil {
					return err
				}
			}
		}),
	}
}

// trustKey is the trust material trustd serves with.
func trustKey(cfg *configs.Config) string {
	parts := [][]byte{cfg.Machine.CA.Crt, cfg.Machine.CA.Key}
	for _, a := range cfg.Machine.AcceptedCAs {
		parts = append(parts, a.Crt)
	}

	sum := sha256.Sum256(bytes.Join(parts, []byte{0}))

	return string(sum[:])
}

// serveTrustd runs one trustd server until ctx ends.
func (p *Plane) serveTrustd(ctx context.Context, cfg *configs.Config, listening *supervisor.Listening, log io.Writer) error {
	ca := &pki.CertAndKey{Crt: cfg.Machine.CA.Crt, Key: cfg.Machine.CA.Key}

	var accepted [][]byte
	for _, a := range cfg.Machine.AcceptedCAs {
		accepted = append(accepted, a.Crt)
	}

	ips, dns := nodeNames(cfg)

	srv, err := trustd.NewServer(trustd.Options{
		CA:          ca,
		AcceptedCAs: accepted,
		Token:       cfg.Machine.Token,
		ServerCert:  trustd.ServerCertificate(ca, pki.ServerOptions{CommonName: hostname(cfg), IPs: ips, DNSNames: dns}),
		Log:         log,
		Registry:    servedRegistry{p},
	})
	if err != nil {
		return err
	}

	lis, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(p.opts.TrustdPort)))
	if err != nil {
		return fmt.Errorf("trustd: %w", err)
	}

	fmt.Fprintf(log, "trustd serving on %s\n", lis.Addr())

	listening.Serving(true)
	defer listening.Serving(false)

	return srv.Serve(ctx, lis)
}
