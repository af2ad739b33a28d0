package pcap_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
	"github.com/google/gopacket/pcapgo"
	"golang.org/x/net/bpf"

	"github.com/talosbox/talosbox/internal/pcap"
)

// syncBuffer is a bytes.Buffer the capture writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()

	return bytes.Clone(s.b.Bytes())
}

// udpPort compiles "udp dst port P" for Ethernet frames (what
// `tcpdump -dd -y EN10MB 'udp dst port P'` prints, IPv4 only).
func udpPort(port uint16) []bpf.RawInstruction {
	prog, err := bpf.Assemble([]bpf.Instruction{
		bpf.LoadAbsolute{Off: 12, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 0x0800, SkipFalse: 6},
		bpf.LoadAbsolute{Off: 23, Size: 1},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 17, SkipFalse: 4},
		bpf.LoadMemShift{Off: 14},
		bpf.LoadIndirect{Off: 16, Size: 2},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(port), SkipFalse: 1},
		bpf.RetConstant{Val: 262144},
		bpf.RetConstant{Val: 0},
	})
	if err != nil {
		panic(err)
	}

	return prog
}

// TestCaptureLoopback captures on lo with a filter for one UDP port,
// sends a datagram to it and one to another port, and reads the file back
// with gopacket's pcap reader: the first is there, whole, the second not.
func TestCaptureLoopback(t *testing.T) {
	recv, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { recv.Close() })

	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })

	port := uint16(recv.LocalAddr().(*net.UDPAddr).Port)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var out syncBuffer

	done := make(chan error, 1)

	go func() {
		done <- pcap.Capture(ctx, &out, pcap.Options{Interface: "lo", Filter: udpPort(port)})
	}()

	// The header is written once the socket is open: wait for it before
	// sending, so the packets cannot precede the capture.
	deadline := time.Now().Add(10 * time.Second)
	for len(out.Bytes()) < 24 {
		if time.Now().After(deadline) {
			t.Fatal("no pcap header within 10s")
		}

		select {
		case err := <-done:
			t.Fatalf("capture ended early: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}

	payload := []byte("talosbox-pcap-probe")

	send, err := net.DialUDP("udp4", nil, recv.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer send.Close()

	if _, err := send.Write(payload); err != nil {
		t.Fatal(err)
	}

	noise, err := net.DialUDP("udp4", nil, other.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer noise.Close()

	if _, err := noise.Write([]byte("not-this-one")); err != nil {
		t.Fatal(err)
	}

	// The datagram arrived, so the kernel has passed it to the packet
	// socket too; the capture loop writes it right after.
	if _, _, err := recv.ReadFrom(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}

	var packets []gopacket.Packet

	for deadline := time.Now().Add(10 * time.Second); len(packets) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the datagram was not captured within 10s")
		}

		packets = readPackets(t, out.Bytes())
		if len(packets) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
	}

	cancel()

	if err := <-done; err != nil {
		t.Fatalf("Capture after cancel: %v", err)
	}

	packets = readPackets(t, out.Bytes())

	for _, p := range packets {
		udp, _ := p.Layer(layers.LayerTypeUDP).(*layers.UDP)
		if udp == nil || uint16(udp.DstPort) != port {
			t.Errorf("captured a packet the filter should have dropped: %v", p)
		}
	}

	udp := packets[0].Layer(layers.LayerTypeUDP).(*layers.UDP)
	if !bytes.Equal(udp.Payload, payload) {
		t.Errorf("payload %q, want %q", udp.Payload, payload)
	}
}

func readPackets(t *testing.T, b []byte) []gopacket.Packet {
	t.Helper()

	r, err := pcapgo.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a pcap file: %v", err)
	}

	if r.LinkType() != layers.LinkTypeEthernet {
		t.Fatalf("link type %v, want Ethernet for lo", r.LinkType())
	}

	var out []gopacket.Packet

	for {
		data, _, err := r.ReadPacketData()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return out
		}

		if err != nil {
			t.Fatal(err)
		}

		out = append(out, gopacket.NewPacket(data, layers.LinkTypeEthernet, gopacket.Default))
	}
}

func TestCaptureRefuses(t *testing.T) {
	for name, opts := range map[string]pcap.Options{
		"unknown interface": {Interface: "nosuchif0"},
		"bad filter":        {Interface: "lo", Filter: []bpf.RawInstruction{{Op: 0xffff}}},
	} {
		t.Run(name, func(t *testing.T) {
			err := pcap.Capture(context.Background(), io.Discard, opts)
			if err == nil {
				t.Fatal("capture started")
			}

			t.Log(err)
		})
	}
}
