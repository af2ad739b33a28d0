package client_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs/generate"
	"github.com/talosbox/talosbox/internal/apid/apidtest"
	"github.com/talosbox/talosbox/internal/client"
	"github.com/talosbox/talosbox/internal/configpatch"
	"github.com/talosbox/talosbox/internal/pki"
)

// The client is tested against real nodes: a container-mode machine.Node
// with its apid, in this process, on a loopback address. Test files are
// not in the client's import graph, so the client itself still imports
// no node-side package.

// secrets are one cluster's, shared by the nodes of a test binary.
var secrets = sync.OnceValues(func() (*pki.Bundle, error) { return pki.NewBundle(pki.BundleOptions{}) })

// testNode is a running node; addr is its apid's host:port.
type testNode struct {
	name string
	addr string
}

// startNode boots a node named name whose apid listens on ip (port chosen
// by the kernel). configured false leaves it in maintenance mode.
func startNode(t *testing.T, ip, name string, configured bool) *testNode {
	t.Helper()

	b, err := secrets()
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	cfgPath := ""

	if configured {
		out, err := generate.Generate(generate.Options{ClusterName: "client", Endpoint: "https://127.0.0.1:6443", Secrets: b})
		if err != nil {
			t.Fatal(err)
		}

		data, err := out.ControlPlane.Encode()
		if err != nil {
			t.Fatal(err)
		}

		// The certificate names the address the node is dialled on.
		patch, err := configpatch.Parse(fmt.Appendf(nil, "machine: {certSANs: [%s]}\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: \"off\"\nhostname: %s\n", ip, name))
		if err != nil {
			t.Fatal(err)
		}

		if data, err = configpatch.Apply(data, patch...); err != nil {
			t.Fatal(err)
		}

		cfgPath = filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(cfgPath, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	nd := apidtest.Start(t, apidtest.Options{Dir: dir, ConfigPath: cfgPath, IP: ip, Name: name})

	return &testNode{name: name, addr: nd.Addr}
}

// adminCredentials are an os:admin client certificate of the cluster.
func adminCredentials(t *testing.T) (ca []byte, crt *pki.CertAndKey) {
	t.Helper()

	b, err := secrets()
	if err != nil {
		t.Fatal(err)
	}

	crt, err = pki.NewClientCertificate(&b.Certs.OS, pki.ClientOptions{Roles: []string{"os:admin"}})
	if err != nil {
		t.Fatal(err)
	}

	return b.Certs.OS.Crt, crt
}

func newClient(t *testing.T, endpoints ...string) *client.Client {
	t.Helper()

	ca, crt := adminCredentials(t)

	c, err := client.New(client.Options{Endpoints: endpoints, CA: ca, Crt: crt.Crt, Key: crt.Key, DialTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { c.Close() })

	return c
}
