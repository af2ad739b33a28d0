// Package netstat reads the kernel's socket tables (/proc/net/tcp and its
// siblings) and finds which process holds each socket, for `talosctl
// netstat`. A table is read through /proc/<pid>/net, which is the view of
// that process's network namespace, so a pod's sockets are read without
// entering its namespace.
package netstat

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Protocols are the tables netstat knows, in the order it lists them.
var Protocols = []string{"tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6"}

// State is a socket's TCP state as /proc/net/tcp numbers it (1
// ESTABLISHED .. 11 CLOSING); UDP and raw sockets are 7 (CLOSE) unless
// connected (1).
type State uint8

// States the filters need by name.
const (
	StateEstablished State = 1
	StateClose       State = 7
	StateListen      State = 10
)

// Socket is one line of a table.
type Socket struct {
	Proto      string
	Local      netip.AddrPort
	Remote     netip.AddrPort
	State      State
	TxQueue    uint64
	RxQueue    uint64
	Timer      uint8 // tr: 0 off, 1 on, 2 keepalive, 3 timewait, 4 probe
	TimerWhen  uint64
	Retransmit uint64
	UID        uint32
	Timeout    uint64
	Inode      uint64
	Ref        uint64
	Pointer    uint64
}

// Listening is what `netstat -l` shows: TCP sockets in LISTEN, and
// unconnected UDP and raw sockets (which receive from anyone).
func (s Socket) Listening() bool {
	if strings.HasPrefix(s.Proto, "tcp") {
		return s.State == StateListen
	}

	return s.State == StateClose
}

// ReadTable reads one protocol's table under procNet (/proc/net, or
// /proc/<pid>/net for another namespace). A protocol the kernel does not
// have (udplite without the module) is an empty table.
func ReadTable(procNet, proto string) ([]Socket, error) {
	f, err := os.Open(filepath.Join(procNet, proto))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}

	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck

	return ParseTable(f, proto)
}

// ParseTable parses a table in /proc/net/tcp's format.
func ParseTable(r io.Reader, proto string) ([]Socket, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)

	var out []Socket

	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			continue // the header
		}

		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}

		s, err := parseLine(text, proto)
		if err != nil {
			return nil, fmt.Errorf("%s: line %d: %w", proto, line+1, err)
		}

		out = append(out, s)
	}

	return out, sc.Err()
}

// parseLine reads "sl local rem st tx:rx tr:when retrnsmt uid timeout
// inode ref pointer ...".
func parseLine(text, proto string) (Socket, error) {
	f := strings.Fields(text)
	if len(f) < 10 {
		return Socket{}, fmt.Errorf("%d fields, want at least 10", len(f))
	}

	s := Socket{Proto: proto}

	var err error

	if s.Local, err = parseAddr(f[1]); err != nil {
		return Socket{}, fmt.Errorf("local address: %w", err)
	}

	if s.Remote, err = parseAddr(f[2]); err != nil {
		return Socket{}, fmt.Errorf("remote address: %w", err)
	}

	st, err := strconv.ParseUint(f[3], 16, 8)
	if err != nil {
		return Socket{}, fmt.Errorf("state: %w", err)
	}

	s.State = State(st)

	if s.TxQueue, s.RxQueue, err = hexPair(f[4]); err != nil {
		return Socket{}, fmt.Errorf("queues: %w", err)
	}

	tr, when, err := hexPair(f[5])
	if err != nil {
		return Socket{}, fmt.Errorf("timer: %w", err)
	}

	s.Timer, s.TimerWhen = uint8(tr), when

	nums := []*uint64{&s.Retransmit, nil, &s.Timeout, &s.Inode}
	bases := []int{16, 10, 10, 10}

	for i, p := range nums {
		v, err := strconv.ParseUint(f[6+i], bases[i], 64)
		if err != nil {
			return Socket{}, fmt.Errorf("field %d: %w", 7+i, err)
		}

		if p == nil {
			s.UID = uint32(v)
		} else {
			*p = v
		}
	}

	if len(f) > 11 {
		s.Ref, _ = strconv.ParseUint(f[10], 10, 64)
		s.Pointer, _ = strconv.ParseUint(f[11], 16, 64)
	}

	return s, nil
}

func hexPair(s string) (uint64, uint64, error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want a:b", s)
	}

	x, err := strconv.ParseUint(a, 16, 64)
	if err != nil {
		return 0, 0, err
	}

	y, err := strconv.ParseUint(b, 16, 64)

	return x, y, err
}

// parseAddr reads "0100007F:1F90": the address as the kernel's 32-bit
// words in host (little-endian) order, the port big-endian hex.
func parseAddr(s string) (netip.AddrPort, error) {
	a, p, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("%q: want address:port", s)
	}

	raw, err := hex.DecodeString(a)
	if err != nil || len(raw) != 4 && len(raw) != 16 {
		return netip.AddrPort{}, fmt.Errorf("%q: bad address", a)
	}

	// Each 32-bit word is little-endian.
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}

	addr, _ := netip.AddrFromSlice(raw)

	port, err := strconv.ParseUint(p, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("%q: bad port", p)
	}

	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
