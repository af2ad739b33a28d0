package netstat_test

import (
	"net"
	"net/netip"
	"os"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/netstat"
)

func TestParseTable(t *testing.T) {
	const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000002 00:00000000 00000000     0        0 12345 1 ffff8880 100 0 0 10 0
   1: 0200A8C0:C350 0100A8C0:01BB 01 00000010:00000000 02:000003E8 00000003  1000        0 777 2 ffff8881 20 4 30 10 -1
`

	got, err := netstat.ParseTable(strings.NewReader(table), "tcp")
	if err != nil {
		t.Fatal(err)
	}

	want := []netstat.Socket{
		{Proto: "tcp", Local: netip.MustParseAddrPort("127.0.0.1:8080"), Remote: netip.MustParseAddrPort("0.0.0.0:0"), State: netstat.StateListen, RxQueue: 2, Inode: 12345, Ref: 1, Pointer: 0xffff8880},
		{Proto: "tcp", Local: netip.MustParseAddrPort("192.168.0.2:50000"), Remote: netip.MustParseAddrPort("192.168.0.1:443"), State: netstat.StateEstablished, TxQueue: 16, Timer: 2, TimerWhen: 1000, Retransmit: 3, UID: 1000, Inode: 777, Ref: 2, Pointer: 0xffff8881},
	}

	if len(got) != len(want) {
		t.Fatalf("got %d sockets, want %d: %+v", len(got), len(want), got)
	}

	for i := range want {
		if got[i] != want[i] {
			t.Errorf("socket %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}

	if !got[0].Listening() || got[1].Listening() {
		t.Errorf("Listening: %v %v, want true false", got[0].Listening(), got[1].Listening())
	}
}

func TestParseTableIPv6(t *testing.T) {
	const table = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:0016 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 99 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:0035 00000000000000000000000000000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 98 2 0000000000000000 0
`

	got, err := netstat.ParseTable(strings.NewReader(table), "udp6")
	if err != nil {
		t.Fatal(err)
	}

	if got[0].Local != netip.MustParseAddrPort("[::1]:22") {
		t.Errorf("local %v, want [::1]:22", got[0].Local)
	}

	// A v4-mapped address is shown as IPv4, as netstat does.
	if got[1].Local != netip.MustParseAddrPort("127.0.0.1:53") || !got[1].Listening() {
		t.Errorf("local %v listening %v, want 127.0.0.1:53 true", got[1].Local, got[1].Listening())
	}
}

func TestParseTableRefuses(t *testing.T) {
	for name, line := range map[string]string{
		"few fields":   "0: 0100007F:1F90 00000000:0000 0A",
		"bad address":  "0: 01007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1",
		"bad port":     "0: 0100007F:XYZ 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1",
		"bad state":    "0: 0100007F:1F90 00000000:0000 QQ 00000000:00000000 00:00000000 00000000 0 0 1",
		"bad queue":    "0: 0100007F:1F90 00000000:0000 0A 0000000000000000 00:00000000 00000000 0 0 1",
		"bad inode":    "0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 x",
		"bad retrnsmt": "0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 zz 0 0 1",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := netstat.ParseTable(strings.NewReader("header\n"+line+"\n"), "tcp"); err == nil || !strings.Contains(err.Error(), "line 2") {
				t.Fatalf("err = %v, want an error naming line 2", err)
			}
		})
	}
}

// TestReadOwnListener finds a listener this test opened in the kernel's
// real table, and this process as its holder.
func TestReadOwnListener(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })

	addr := netip.MustParseAddrPort(l.Addr().String())

	socks, err := netstat.ReadTable("/proc/self/net", "tcp")
	if err != nil {
		t.Fatal(err)
	}

	var found *netstat.Socket

	for i := range socks {
		if socks[i].Local == addr {
			found = &socks[i]
		}
	}

	if found == nil || !found.Listening() {
		t.Fatalf("listener %v not in /proc/self/net/tcp as LISTEN: %+v", addr, found)
	}

	holders, netns := netstat.Processes("/proc")
	if p := holders[found.Inode]; p.PID != os.Getpid() || p.Name == "" {
		t.Errorf("holder of inode %d = %+v, want pid %d", found.Inode, p, os.Getpid())
	}

	ino, ok := netstat.NamespaceInode("/proc/self/ns/net")
	if !ok || netns[ino] == 0 {
		t.Errorf("own network namespace %d not found among processes' (%v)", ino, ok)
	}

	if socks, err := netstat.ReadTable("/proc/self/net", "nosuchproto"); err != nil || socks != nil {
		t.Errorf("missing table: %v %v, want empty", socks, err)
	}
}
