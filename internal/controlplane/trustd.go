package controlplane

import (
	"context"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/supervisor"
	"github.com/talosbox/talosbox/internal/trustd"
)

// trustdService serves certificates to workers that present machine.token,
// signed by the OS CA this control-plane node holds.
func (p *Plane) trustdService(cfg *configs.Config) supervisor.Service {
	listening := &supervisor.Listening{}

	return supervisor.Service{
		ID:     "trustd",
		Health: listening.Check(),
		Runner: supervisor.GoroutineRunner(func(ctx context.Context, log io.Writer) error {
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
		}),
	}
}
