package testnet_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/testnet"
)

func TestHostsReachEachOther(t *testing.T) {
	nw := testnet.New(t, 2)

	// A server in host 0, a client in host 1: the bytes cross two veths
	// and the hub's bridge.
	l, err := testnet.Listen(nw.Hosts[0].NS, "tcp", nw.Hosts[0].Addr.String()+":7000")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()

		fmt.Fprintf(c, "hello from %s\n", c.LocalAddr())
	}()

	var reply string

	err = testnet.InNS(nw.Hosts[1].NS, func() error {
		c, err := net.DialTimeout("tcp", nw.Hosts[0].Addr.String()+":7000", 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()

		c.SetDeadline(time.Now().Add(5 * time.Second)) //nolint:errcheck
		reply, err = bufio.NewReader(c).ReadString('\n')

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	if reply != "hello from 10.5.0.2:7000\n" {
		t.Fatalf("reply %q", reply)
	}

	// The host namespace does not see the test network.
	out, err := testnet.Command(nw.Hosts[1].NS, "ip", "-4", "-o", "addr", "show", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "10.5.0.3/24") {
		t.Fatalf("host 1 address: %s %v", out, err)
	}
}
