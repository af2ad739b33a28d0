package hostdns

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// freePort finds a port free for both UDP and TCP on 127.0.0.1.
func freePort(t *testing.T) int {
	t.Helper()

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	return l.Addr().(*net.TCPAddr).Port
}

// startDnsmasq runs Debian's dnsmasq as the upstream resolver, answering
// web.test with 192.0.2.7 and nothing else.
func startDnsmasq(t *testing.T) netip.AddrPort {
	t.Helper()

	bin, err := exec.LookPath("dnsmasq")
	if err != nil {
		t.Fatalf("dnsmasq is not installed (make deps): %v", err)
	}

	port := freePort(t)
	cmd := exec.Command(bin, "--keep-in-foreground", "--no-resolv", "--no-hosts", "--bind-interfaces",
		"--listen-address=127.0.0.1", fmt.Sprintf("--port=%d", port), "--address=/web.test/192.0.2.7",
		"--user=root", "--pid-file="+filepath.Join(t.TempDir(), "pid"), "--log-facility=-")
	cmd.Stderr = os.Stderr

	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) //nolint:errcheck // stopping

	return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(port))
}

func resolver(addr string, tcp bool) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		if tcp {
			network = "tcp"
		}

		var d net.Dialer

		return d.DialContext(ctx, network, addr)
	}}
}

func TestForwards(t *testing.T) {
	up := startDnsmasq(t)
	dead := netip.MustParseAddrPort("127.0.0.1:1") // nothing listens: the next upstream is tried

	listen := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), uint16(freePort(t)))
	ctx, cancel := context.WithCancel(context.Background())

	done := make(chan error, 1)

	go func() {
		done <- Serve(ctx, Options{Listen: listen, Timeout: time.Second, Upstreams: func() []netip.AddrPort { return []netip.AddrPort{dead, up} }})
	}()

	t.Cleanup(func() {
		cancel()

		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	for _, tcp := range []bool{false, true} {
		t.Run(fmt.Sprintf("tcp=%v", tcp), func(t *testing.T) {
			r := resolver(listen.String(), tcp)

			// dnsmasq may take a moment to listen: retry until a deadline.
			deadline := time.Now().Add(10 * time.Second)

			for {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				addrs, err := r.LookupHost(ctx, "web.test")
				cancel()

				if err == nil {
					if len(addrs) != 1 || addrs[0] != "192.0.2.7" {
						t.Fatalf("web.test = %v", addrs)
					}

					break
				}

				if time.Now().After(deadline) {
					t.Fatalf("lookup through the forwarder: %v", err)
				}
			}

			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()

			if _, err := r.LookupHost(ctx, "other.test"); err == nil {
				t.Error("other.test resolved; dnsmasq knows only web.test")
			}
		})
	}
}

func TestResolvConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "resolv.conf")
	data := "search example.com\nnameserver 169.254.116.108\nnameserver 127.0.0.11\nnameserver ::1\nnameserver bogus\noptions ndots:0\n"

	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}

	got := ResolvConf(p, Address)
	want := []netip.AddrPort{netip.MustParseAddrPort("127.0.0.11:53"), netip.MustParseAddrPort("[::1]:53")}

	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ResolvConf = %v, want %v", got, want)
	}

	if ResolvConf(filepath.Join(t.TempDir(), "missing")) != nil {
		t.Error("a missing file has nameservers")
	}
}
