package apid

import (
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

// TestServerCertificateFollowsAddresses: a new address on the node gets a
// new serving certificate naming it, without waiting for half-life.
func TestServerCertificateFollowsAddresses(t *testing.T) {
	cfg, err := configs.Decode(nodeConfig(t, false))
	if err != nil {
		t.Fatal(err)
	}

	id, err := newIdentity(cfg, identityOptions{hostname: "cp-1"})
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex

	addrs := []net.IP{net.ParseIP("10.5.0.2")}
	id.addresses = func() []net.IP {
		mu.Lock()
		defer mu.Unlock()

		return slices.Clone(addrs)
	}

	first, err := id.server.get()
	if err != nil {
		t.Fatal(err)
	}

	if !slices.ContainsFunc(first.Leaf.IPAddresses, net.ParseIP("10.5.0.2").Equal) {
		t.Fatalf("first certificate names %v", first.Leaf.IPAddresses)
	}

	again, _ := id.server.get()
	if again != first {
		t.Fatal("the certificate was re-issued with nothing changed")
	}

	mu.Lock()
	addrs = append(addrs, net.ParseIP("10.5.0.100"))
	mu.Unlock()

	// The check is spaced out; make the next one due now.
	id.server.mu.Lock()
	id.server.checkedAt = time.Time{}
	id.server.mu.Unlock()

	second, err := id.server.get()
	if err != nil {
		t.Fatal(err)
	}

	if second == first || !slices.ContainsFunc(second.Leaf.IPAddresses, net.ParseIP("10.5.0.100").Equal) {
		t.Fatalf("after a new address the certificate names %v", second.Leaf.IPAddresses)
	}
}
