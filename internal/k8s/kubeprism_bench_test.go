package k8s

import (
	"bufio"
	"context"
	"io"
	"net"
	"testing"
)

// BenchmarkPrism compares a connection through KubePrism with one straight
// to the upstream, in the same run: what the kubelet and the control-plane
// components pay for going through it. connect is a new connection and
// one round trip (clients reconnect after an upstream ends); stream is
// 32 KiB echoed on an open connection (a watch or a list).
func BenchmarkPrism(b *testing.B) {
	up := startNamed(b, "up").addr()

	p := &Prism{}
	p.SetUpstreams([]string{up})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		p.Serve(ctx, ln) //nolint:errcheck // ends with the benchmark
	}()

	b.Cleanup(func() { cancel(); <-done })

	for _, via := range []struct{ name, addr string }{{"direct", up}, {"kubeprism", ln.Addr().String()}} {
		b.Run("connect/"+via.name, func(b *testing.B) {
			for b.Loop() {
				c, r := dialNamed(b, via.addr)

				if _, err := c.Write([]byte("ping\n")); err != nil {
					b.Fatal(err)
				}

				if _, err := r.ReadString('\n'); err != nil {
					b.Fatal(err)
				}

				c.Close()
			}
		})

		b.Run("stream/"+via.name, func(b *testing.B) {
			c, r := dialNamed(b, via.addr)
			defer c.Close()

			buf := make([]byte, 32<<10)
			b.SetBytes(int64(len(buf)))

			for b.Loop() {
				if _, err := c.Write(buf); err != nil {
					b.Fatal(err)
				}

				if _, err := io.ReadFull(r, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// dialNamed connects and reads the upstream's name line.
func dialNamed(b *testing.B, addr string) (net.Conn, *bufio.Reader) {
	b.Helper()

	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}

	r := bufio.NewReader(c)
	if name, err := r.ReadString('\n'); err != nil || name != "up\n" {
		b.Fatalf("upstream said %q, %v", name, err)
	}

	return c, r
}
