// Package trustd is the trustd applet: the certificate service of a
// control plane (internal/trustd) run alone, signing the certificate
// requests of nodes that present the token, until SIGTERM.
package trustd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/applet"
	"github.com/talosbox/talosbox/internal/constants"
	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/pki"
	"github.com/talosbox/talosbox/internal/trustd"
)

// Applet is trustd's entry in the multicall table.
var Applet = applet.Applet{
	Name:    "trustd",
	Summary: "certificates for joining nodes that present the token, port 50001",
	Main:    Main,
}

const usage = `Usage: trustd --ca-cert FILE --ca-key FILE (--token TOKEN | --token-file FILE) [--listen ADDR]
       trustd --config controlplane.yaml [--listen ADDR]

Sign the certificate requests of nodes that present the token with the OS
CA, on :50001, as a control plane's trustd does inside machined: a worker,
which has no CA key, gets its apid server certificate this way. Whatever a
request asks for, the certificate is for server authentication only; it
comes back with the CAs to trust. SIGTERM or SIGINT stop it.

With --config the CA (machine.ca), the accepted CAs (machine.acceptedCAs),
the token (machine.token) and extra names (machine.certSANs) come from a
control-plane machine config, such as talosctl gen config writes; the
flags override them. --token-file keeps the token out of the process list.

trustd serves TLS with a certificate of its own from the same CA, for
localhost, 127.0.0.1, ::1, the hostname, this host's addresses and
--cert-sans: callers check it against the CA before they send the token.

Flags:
`

// options is the parsed command line.
type options struct {
	config, caCert, caKey, token, tokenFile, listen string

	ttl      time.Duration
	certSANs applet.List
}

// Main runs trustd with args (without the program name).
func Main(ctx context.Context, args []string, env applet.Env) int {
	fs := applet.NewFlags("trustd", usage, env)

	var o options

	fs.StringVar(&o.config, "config", "", "control-plane machine config `FILE` to take the CA, token and names from")
	fs.StringVar(&o.caCert, "ca-cert", "", "the OS CA certificate, a PEM `FILE` (with --ca-key)")
	fs.StringVar(&o.caKey, "ca-key", "", "the OS CA's private key, a PEM `FILE` (with --ca-cert)")
	fs.StringVar(&o.token, "token", "", "the `TOKEN` callers must present (machine.token)")
	fs.StringVar(&o.tokenFile, "token-file", "", "read the token from `FILE` instead")
	fs.StringVar(&o.listen, "listen", fmt.Sprintf(":%d", constants.TrustdPort), "`ADDR` (host:port) to serve on")
	fs.DurationVar(&o.ttl, "ttl", trustd.DefaultTTL, "lifetime of the certificates issued")
	fs.Var(&o.certSANs, "cert-sans", "more `NAMES` (IPs or DNS names) for trustd's own serving certificate")
	if code, done := fs.Parse(args); done {
		return code
	}

	if err := o.check(fs.Args()); err != nil {
		fmt.Fprintf(env.Stderr, "trustd: %v\n", err)
		return 2
	}

	srvOpts, err := o.serverOptions()
	if err != nil {
		fmt.Fprintf(env.Stderr, "trustd: %v\n", err)
		return 1
	}

	srvOpts.Log = env.Stdout

	return run(ctx, o.listen, srvOpts, env)
}

// check refuses command lines that cannot work, before any file is read.
func (o *options) check(args []string) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("unexpected argument %q (flags only; see trustd --help)", args[0])
	case (o.caCert == "") != (o.caKey == ""):
		return errors.New("--ca-cert and --ca-key go together")
	case o.config == "" && o.caCert == "":
		return errors.New("no OS CA: give --ca-cert and --ca-key, or --config")
	case o.config == "" && o.token == "" && o.tokenFile == "":
		return errors.New("no token: give --token or --token-file, or --config")
	case o.token != "" && o.tokenFile != "":
		return errors.New("--token and --token-file are exclusive")
	case o.ttl <= 0:
		return fmt.Errorf("--ttl %v: must be positive", o.ttl)
	}

	return nil
}

// serverOptions reads the config and the files the flags name and builds
// the server's options; the flags win over the config.
func (o *options) serverOptions() (trustd.Options, error) {
	var (
		opts     = trustd.Options{TTL: o.ttl}
		hostname = ""
		sans     = []string(o.certSANs)
	)

	if o.config != "" {
		cfg, err := readConfig(o.config)
		if err != nil {
			return opts, err
		}

		m := cfg.Machine
		if m.CA != nil {
			opts.CA = &pki.CertAndKey{Crt: m.CA.Crt, Key: m.CA.Key}
		}

		for _, a := range m.AcceptedCAs {
			opts.AcceptedCAs = append(opts.AcceptedCAs, a.Crt)
		}

		opts.Token = m.Token
		sans = append(sans, m.CertSANs...)

		if m.Network != nil {
			hostname = m.Network.Hostname
		}

		if o.caCert == "" && (opts.CA == nil || len(opts.CA.Key) == 0) {
			return opts, fmt.Errorf("%s: machine.ca has no key (a worker's config?): trustd signs with the CA key; use the control plane's config or --ca-cert and --ca-key", o.config)
		}
	}

	if o.caCert != "" {
		ca, err := pki.ReadCA(o.caCert, o.caKey)
		if err != nil {
			return opts, err
		}

		opts.CA = ca
	}

	switch {
	case o.token != "":
		opts.Token = o.token
	case o.tokenFile != "":
		b, err := os.ReadFile(o.tokenFile)
		if err != nil {
			return opts, fmt.Errorf("token: %w", err)
		}

		opts.Token = strings.TrimSpace(string(b))
	}

	if opts.Token == "" {
		return opts, errors.New("the token is empty: anyone could get a certificate")
	}

	if hostname == "" {
		hostname, _ = os.Hostname() //nolint:errcheck // the certificate has other names
	}

	opts.ServerCert = trustd.ServerCertificate(opts.CA, serverNames(hostname, sans))

	return opts, nil
}

func readConfig(path string) (*configs.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}

	cfg, err := configs.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}

	if cfg.Machine == nil {
		return nil, fmt.Errorf("config %s has no machine section", path)
	}

	return cfg, nil
}

// serverNames are the SANs of trustd's serving certificate: whatever name
// or address a caller may dial it by.
func serverNames(hostname string, extra []string) pki.ServerOptions {
	opts := pki.ServerOptions{CommonName: hostname, IPs: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, DNSNames: []string{"localhost"}}
	if opts.CommonName == "" {
		opts.CommonName = "trustd"
	}

	if hostname != "" {
		opts.DNSNames = append(opts.DNSNames, hostname)
	}

	for _, a := range network.HostAddrs() {
		opts.IPs = append(opts.IPs, a.AsSlice())
	}

	for _, s := range extra {
		if ip := net.ParseIP(s); ip != nil {
			opts.IPs = append(opts.IPs, ip)
		} else {
			opts.DNSNames = append(opts.DNSNames, s)
		}
	}

	return opts
}

func run(ctx context.Context, listen string, opts trustd.Options, env applet.Env) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	srv, err := trustd.NewServer(opts)
	if err != nil {
		fmt.Fprintf(env.Stderr, "trustd: %v\n", err)
		return 1
	}

	lis, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(env.Stderr, "trustd: %v\n", err)
		return 1
	}

	// Serve says where it serves; the rest is what a caller needs to know.
	fmt.Fprintf(env.Stdout, "trustd: issuing server certificates valid for %s from the OS CA to holders of the token\n", opts.TTL)

	if err := srv.Serve(ctx, lis); err != nil {
		fmt.Fprintf(env.Stderr, "trustd: %v\n", err)
		return 1
	}

	fmt.Fprintln(env.Stdout, "trustd: stopped")

	return 0
}
