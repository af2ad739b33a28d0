package netstat_test

import (
	"os"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/internal/netstat"
)

func TestParseDevices(t *testing.T) {
	const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:  123456     789    0    0    0     0          0         0   123456     789    0    0    0     0       0          0
  eth0: 9876543210 1000    1    2    3     4          5         6  555 44 7 8 9 10 11 12
`

	got, err := netstat.ParseDevices(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}

	if len(got) != 2 || got[0].Name != "lo" || got[0].Rx[0] != 123456 || got[1].Name != "eth0" ||
		got[1].Rx != [8]uint64{9876543210, 1000, 1, 2, 3, 4, 5, 6} || got[1].Tx != [8]uint64{555, 44, 7, 8, 9, 10, 11, 12} {
		t.Fatalf("parsed %+v", got)
	}

	if _, err := netstat.ParseDevices(strings.NewReader("h|\nh|\n  eth0: 1 2 3\n")); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a short line: %v", err)
	}

	// This machine's own table parses, and has lo.
	f, err := os.Open("/proc/net/dev")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	own, err := netstat.ParseDevices(f)
	if err != nil || !strings.Contains(func() string {
		var names []string
		for _, d := range own {
			names = append(names, d.Name)
		}

		return strings.Join(names, " ")
	}(), "lo") {
		t.Errorf("/proc/net/dev: %v %+v", err, own)
	}
}
