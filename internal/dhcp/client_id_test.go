package dhcp

import (
	"strings"
	"testing"
	"time"
)

// TestClientIdentifier: what the client sends as option 61 is what
// dnsmasq records the lease under (the last field of its lease file,
// "*" for none), and the release finds the lease by it.
func TestClientIdentifier(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{name: "none", want: "*"},
		{name: "mac", opts: Options{ClientIDFromMAC: true}, want: "01:" + clientMAC},
		{name: "duid", opts: Options{ClientID: []byte{0, 1, 0, 1, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd}}, want: "00:01:00:01:23:45:67:89:ab:cd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBench(t)
			b.run(tc.opts)

			l := b.next(acquireTimeout, Acquired).mustLease(t)
			line := clientMAC + " " + l.Address.Addr().String() + " node-1 " + tc.want

			poll(t, 5*time.Second, "the lease under client ID "+tc.want, func() bool {
				return strings.Contains(b.server.leases(), line)
			})

			b.cancel()
			b.next(10*time.Second, Released)

			poll(t, 5*time.Second, "dnsmasq to drop the lease", func() bool {
				return !strings.Contains(b.server.leases(), clientMAC)
			})
		})
	}
}
