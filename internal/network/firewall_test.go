package network_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/vishvananda/netns"
	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"

	"github.com/talosbox/talosbox/internal/network"
	"github.com/talosbox/talosbox/internal/testnet"
)

// How long a connection attempt may take to be answered on a local test
// network, and how long one that gets no answer is waited for before it
// counts as dropped (a dropped SYN gets neither a SYN-ACK nor a reset).
const (
	answerTimeout = 10 * time.Second
	dropTimeout   = 2 * time.Second
)

// fwProbe is where a connection attempt comes from and goes to.
type fwProbe struct {
	name     string
	from, to string // namespace; host:port
	udp      bool
	accepted bool
}

// TestFirewall: the ingress firewall of NetworkDefaultActionConfig and
// NetworkRuleConfig, in the kernel of a node on a test network (hub
// 10.5.0.1, the node 10.5.0.2, another host 10.5.0.3): real connections
// are let in or dropped as the rules say, with block and with accept,
// the node's own connections and loopback keep working, pods reach each
// other, and without the documents the firewall goes.
func TestFirewall(t *testing.T) {
	nw := testnet.New(t, 2)
	node, other := nw.Hosts[0].NS, nw.Hosts[1].NS

	// A "pod" behind the node: 10.244.0.6 in a namespace of its own,
	// 10.244.0.1 on the node's side (as a CNI bridge would be).
	pod := newNS(t)
	nodeNS := &testNS{t: t, name: node}
	nodeNS.ip("link", "add", "cni0", "type", "veth", "peer", "name", "eth0", "netns", pod.name)
	nodeNS.ip("addr", "add", "10.244.0.1/24", "dev", "cni0")
	nodeNS.ip("link", "set", "cni0", "up")
	pod.ip("addr", "add", "10.244.0.6/24", "dev", "eth0")
	pod.ip("link", "set", "eth0", "up")

	for _, port := range []int{7000, 8000, 8001} {
		serveTCP(t, node, fmt.Sprintf("0.0.0.0:%d", port))
	}

	serveUDP(t, node, "0.0.0.0:5300")
	serveTCP(t, nw.Hub, "10.5.0.1:9000")

	nd := startNode(t, nodeNS, nil)

	nd.setDocuments(`apiVersion: v1alpha1
kind: NetworkDefaultActionConfig
ingress: block
---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: from-the-hub
portSelector:
  ports: [8000, 5300]
  protocol: tcp
ingress:
  - subnet: 10.5.0.1/32
---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: dns-from-the-hub
portSelector:
  ports: [5300]
  protocol: udp
ingress:
  - subnet: 10.5.0.1/32
---
apiVersion: v1alpha1
kind: NetworkRuleConfig
name: subnet-but-one
portSelector:
  ports: [8001-8002]
  protocol: tcp
ingress:
  - subnet: 10.5.0.0/24
    except: 10.5.0.3/32
`)
	waitFirewall(t, nodeNS, true)

	runProbes(t, []fwProbe{
		{name: "a rule's subnet to its port", from: nw.Hub, to: "10.5.0.2:8000", accepted: true},
		{name: "another subnet to the port", from: other, to: "10.5.0.2:8000"},
		{name: "a port no rule opens", from: nw.Hub, to: "10.5.0.2:7000"},
		{name: "a rule's subnet", from: nw.Hub, to: "10.5.0.2:8001", accepted: true},
		{name: "the rule's except subnet", from: other, to: "10.5.0.2:8001"},
		{name: "UDP from the rule's subnet", from: nw.Hub, to: "10.5.0.2:5300", udp: true, accepted: true},
		{name: "UDP from another subnet", from: other, to: "10.5.0.2:5300", udp: true},
		{name: "the node's own connection out", from: node, to: "10.5.0.1:9000", accepted: true},
		{name: "loopback", from: node, to: "127.0.0.1:7000", accepted: true},
		{name: "pod to the pod subnet", from: pod.name, to: "10.244.0.1:7000", accepted: true},
	})

	// ICMP is let in (at 5 packets a second).
	if err := ping(other, "10.5.0.2"); err != nil {
		t.Errorf("ping through ingress: block: %v", err)
	}

	// With accept, a rule keeps everyone but its subnets out of its
	// ports, and the rest is open.
	nd.setDocuments(`apiVersion: v1alpha1
kind: NetworkRuleConfig
name: from-the-hub
portSelector:
  ports: [8000]
  protocol: tcp
ingress:
  - subnet: 10.5.0.1/32
`)
	waitFirewall(t, nodeNS, false)

	runProbes(t, []fwProbe{
		{name: "the rule's subnet to its port", from: nw.Hub, to: "10.5.0.2:8000", accepted: true},
		{name: "another subnet to the port", from: other, to: "10.5.0.2:8000"},
		{name: "another subnet to another port", from: other, to: "10.5.0.2:7000", accepted: true},
		{name: "UDP, no rule", from: other, to: "10.5.0.2:5300", udp: true, accepted: true},
	})

	// Without the documents the table goes, and everything is let in.
	nd.setDocuments("version: v1alpha1\nmachine:\n  type: worker\n")
	waitNoFirewall(t, nodeNS)

	runProbes(t, []fwProbe{{name: "no firewall", from: other, to: "10.5.0.2:8000", accepted: true}})
}

func runProbes(t *testing.T, probes []fwProbe) {
	t.Helper()

	for _, p := range probes {
		err := probe(p)

		switch {
		case p.accepted && err != nil:
			t.Errorf("%s (%s to %s): %v, want an answer", p.name, p.from, p.to, err)
		case !p.accepted && err == nil:
			t.Errorf("%s (%s to %s): answered, want dropped", p.name, p.from, p.to)
		case !p.accepted && !isTimeout(err):
			// A reset or an unreachable is not a drop.
			t.Errorf("%s (%s to %s): %v, want no answer (dropped)", p.name, p.from, p.to, err)
		}
	}
}

func isTimeout(err error) bool {
	var ne net.Error

	return errors.As(err, &ne) && ne.Timeout()
}

// probe connects from p.from to p.to (TCP) or sends it a datagram (UDP)
// and waits for the echo: nil when answered.
func probe(p fwProbe) error {
	timeout := dropTimeout
	if p.accepted {
		timeout = answerTimeout
	}

	return testnet.InNS(p.from, func() error {
		if !p.udp {
			c, err := net.DialTimeout("tcp", p.to, timeout)
			if err != nil {
				return err
			}

			return c.Close()
		}

		c, err := net.Dial("udp", p.to)
		if err != nil {
			return err
		}
		defer c.Close()

		if err := c.SetDeadline(time.Now().Add(timeout)); err != nil {
			return err
		}

		if _, err := c.Write([]byte("ping")); err != nil {
			return err
		}

		buf := make([]byte, 16)

		n, err := c.Read(buf)
		if err != nil {
			return err
		}

		if string(buf[:n]) != "ping" {
			return fmt.Errorf("echo %q", buf[:n])
		}

		return nil
	})
}

// serveTCP accepts and closes connections at addr in namespace ns until
// the test ends.
func serveTCP(t *testing.T, ns, addr string) {
	t.Helper()

	l, err := testnet.Listen(ns, "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { l.Close() })

	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}

			c.Close()
		}
	}()
}

// serveUDP echoes datagrams at addr in namespace ns until the test ends.
func serveUDP(t *testing.T, ns, addr string) {
	t.Helper()

	var pc net.PacketConn

	if err := testnet.InNS(ns, func() (err error) {
		pc, err = net.ListenPacket("udp", addr)
		return err
	}); err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { pc.Close() })

	go func() {
		buf := make([]byte, 64)

		for {
			n, from, err := pc.ReadFrom(buf)
			if errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) {
				return
			}

			if err == nil {
				pc.WriteTo(buf[:n], from) //nolint:errcheck // the probe sees a lost echo
			}
		}
	}()
}

// nftChains lists the firewall table's chains in ns, by name, with their
// policy ("accept", "drop").
func nftChains(t *testing.T, ns *testNS) map[string]string {
	t.Helper()

	h, err := netns.GetFromPath(ns.path())
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close() //nolint:errcheck

	conn, err := nftables.New(nftables.WithNetNSFd(int(h)))
	if err != nil {
		t.Fatal(err)
	}

	chains, err := conn.ListChainsOfTableFamily(nftables.TableFamilyINet)
	if err != nil {
		t.Fatal(err)
	}

	out := map[string]string{}

	for _, c := range chains {
		if c.Table.Name != network.FirewallTable {
			continue
		}

		out[c.Name] = "accept"
		if c.Policy != nil && *c.Policy == nftables.ChainPolicyDrop {
			out[c.Name] = "drop"
		}
	}

	return out
}

// waitFirewall waits until the firewall has its ingress chain with the
// block (drop) or accept policy, and its prerouting chain.
func waitFirewall(t *testing.T, ns *testNS, block bool) {
	t.Helper()

	want := "accept"
	if block {
		want = "drop"
	}

	pollUntil(t, ns, "the firewall with ingress policy "+want, func() bool {
		c := nftChains(t, ns)
		return c["ingress"] == want && c["prerouting"] == "accept"
	})
}

func waitNoFirewall(t *testing.T, ns *testNS) {
	t.Helper()

	pollUntil(t, ns, "the firewall table gone", func() bool { return len(nftChains(t, ns)) == 0 })
}

// pollUntil checks cond every 20 ms until it holds, failing the test
// after 15 s: nftables changes raise no event the test could wait on.
func pollUntil(t *testing.T, ns *testNS, what string, cond func() bool) {
	t.Helper()

	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			out, _ := exec.Command("ip", "netns", "exec", ns.name, "nft", "list", "ruleset").CombinedOutput() //nolint:errcheck // diagnostics
			t.Fatalf("timed out waiting for %s\n%s", what, out)
		}
	}
}

// ping sends one ICMP echo request from namespace ns to addr and waits
// for the reply.
func ping(ns, addr string) error {
	return testnet.InNS(ns, func() error {
		c, err := icmp.ListenPacket("ip4:icmp", "0.0.0.0")
		if err != nil {
			return err
		}
		defer c.Close()

		msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: 0x7b, Seq: 1, Data: []byte("talosbox")}}

		b, err := msg.Marshal(nil)
		if err != nil {
			return err
		}

		if _, err := c.WriteTo(b, &net.IPAddr{IP: net.ParseIP(addr)}); err != nil {
			return err
		}

		if err := c.SetReadDeadline(time.Now().Add(answerTimeout)); err != nil {
			return err
		}

		buf := make([]byte, 1500)

		for {
			n, from, err := c.ReadFrom(buf)
			if err != nil {
				return err
			}

			reply, err := icmp.ParseMessage(1, buf[:n])
			if err == nil && reply.Type == ipv4.ICMPTypeEchoReply && from.String() == addr {
				return nil
			}
		}
	})
}
