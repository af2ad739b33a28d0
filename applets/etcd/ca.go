package etcd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/talosbox/talosbox/internal/atomicfile"
	"github.com/talosbox/talosbox/internal/etcd"
	"github.com/talosbox/talosbox/internal/pki"
)

// CAKeyFile is where a CA this applet made for a new cluster keeps its
// key, beside the ca.crt every start writes: later starts of the member
// use it, and a joining member is given both.
const CAKeyFile = "ca.key"

// loadCA finds the etcd CA: --ca-cert and --ca-key, else the one an
// earlier start made in the PKI dir, else, for a new cluster only, a new
// one. A member that resumes or joins without its cluster's CA would
// issue certificates no other member trusts, so that is an error.
func loadCA(o options, mode etcd.Mode, out io.Writer) (*pki.CertAndKey, error) {
	if o.caCert != "" {
		return pki.ReadCA(o.caCert, o.caKey)
	}

	kept := filepath.Join(o.pkiDir, CAKeyFile)

	_, err := os.Stat(kept)

	switch {
	case err == nil:
		return pki.ReadCA(filepath.Join(o.pkiDir, etcd.CACertFile), kept)
	case !errors.Is(err, os.ErrNotExist):
		return nil, fmt.Errorf("etcd CA: %w", err)
	case mode == etcd.Join:
		return nil, fmt.Errorf("joining a cluster needs its etcd CA: give --ca-cert and --ca-key (the first member's %s and %s)", etcd.CACertFile, CAKeyFile)
	case mode == etcd.Resume:
		return nil, fmt.Errorf("%s holds a member but %s has no CA key: give the cluster's CA with --ca-cert and --ca-key", o.dataDir, o.pkiDir)
	}

	ca, err := pki.NewCA(pki.CAOptions{Organization: "etcd", KeyType: pki.ECDSAP256})
	if err != nil {
		return nil, fmt.Errorf("new etcd CA: %w", err)
	}

	if err := os.MkdirAll(o.pkiDir, 0o700); err != nil {
		return nil, fmt.Errorf("new etcd CA: %w", err)
	}

	// The key first: a ca.crt without its key would look like a CA given
	// with --ca-cert to the next start.
	for _, f := range []struct {
		name string
		data []byte
	}{{CAKeyFile, ca.Key}, {etcd.CACertFile, ca.Crt}} {
		if err := atomicfile.Write(filepath.Join(o.pkiDir, f.name), f.data, 0o600); err != nil {
			return nil, fmt.Errorf("new etcd CA: %w", err)
		}
	}

	fmt.Fprintf(out, "etcd: made a new etcd CA in %s (%s, %s): members that join need both\n", o.pkiDir, etcd.CACertFile, CAKeyFile)

	return ca, nil
}

// keyValues is a repeatable KEY=VALUE flag.
type keyValues map[string]string

func (kv *keyValues) String() string {
	pairs := make([]string, 0, len(*kv))
	for k, v := range *kv {
		pairs = append(pairs, k+"="+v)
	}

	sort.Strings(pairs)

	return strings.Join(pairs, ",")
}

func (kv *keyValues) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not KEY=VALUE", s)
	}

	if *kv == nil {
		*kv = keyValues{}
	}

	(*kv)[strings.TrimPrefix(k, "--")] = v

	return nil
}
