package netstat

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Device is one interface's line of /proc/net/dev: 8 receive counters
// (bytes, packets, errs, drop, fifo, frame, compressed, multicast), then
// 8 transmit ones (bytes, packets, errs, drop, fifo, colls, carrier,
// compressed).
type Device struct {
	Name string
	Rx   [8]uint64
	Tx   [8]uint64
}

// ParseDevices parses /proc/net/dev.
func ParseDevices(r io.Reader) ([]Device, error) {
	var out []Device

	sc := bufio.NewScanner(r)

	for n := 1; sc.Scan(); n++ {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.Contains(name, "|") {
			continue // the two header lines
		}

		f := strings.Fields(rest)
		if len(f) != 16 {
			return nil, fmt.Errorf("/proc/net/dev: line %d: %d counters, want 16", n, len(f))
		}

		d := Device{Name: strings.TrimSpace(name)}

		for i, s := range f {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("/proc/net/dev: line %d: %w", n, err)
			}

			if i < 8 {
				d.Rx[i] = v
			} else {
				d.Tx[i-8] = v
			}
		}

		out = append(out, d)
	}

	return out, sc.Err()
}
