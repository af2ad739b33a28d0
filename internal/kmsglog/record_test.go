package kmsglog_test

import (
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/kmsglog"
)

func TestParseRecord(t *testing.T) {
	t.Parallel()

	boot := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

	for _, tc := range []struct {
		name, in string
		want     kmsglog.Record
		wantErr  string
	}{
		{
			name: "a record and its dictionary",
			in:   "7,160,424069,-;pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n",
			want: kmsglog.Record{Facility: 0, Priority: 7, Seq: 160, Clock: 424069, Time: boot.Add(424069 * time.Microsecond),
				Msg: "pci_root PNP0A03:00: host bridge window [io  0x0000-0x0cf7] (ignored)\n SUBSYSTEM=acpi\n DEVICE=+acpi:PNP0A03:00\n"},
		},
		{
			name: "from user space, with the caller",
			in:   "12,2001,5140900,-,caller=T1;hello\n",
			want: kmsglog.Record{Facility: 1, Priority: 4, Seq: 2001, Clock: 5140900, Time: boot.Add(5140900 * time.Microsecond), Msg: "hello\n"},
		},
		{
			name: "escapes",
			in:   `6,1,2,-;tab\x09back\\slash` + "\n",
			want: kmsglog.Record{Priority: 6, Seq: 1, Clock: 2, Time: boot.Add(2 * time.Microsecond), Msg: "tab\tback\\slash\n"},
		},
		{name: "no prefix", in: "hello", wantErr: "kmsg record has no prefix"},
		{name: "a short prefix", in: "6,1;x", wantErr: `kmsg record prefix "6,1" has 2 fields, want at least 3`},
		{name: "a bad clock", in: "6,1,x,-;x", wantErr: `kmsg record prefix "6,1,x,-": clock: strconv.ParseInt: parsing "x": invalid syntax`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			got, err := kmsglog.ParseRecord([]byte(tc.in), boot)

			switch {
			case tc.wantErr != "":
				if err == nil || err.Error() != tc.wantErr {
					t.Errorf("error %v, want %s", err, tc.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			case got != tc.want:
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestRecordJSON: Talos's json_lines record, byte for byte: the kmsg
// fields, msg, talos-time and talos-level, keys sorted.
func TestRecordJSON(t *testing.T) {
	t.Parallel()

	boot := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

	for _, tc := range []struct {
		prio  int
		level string
	}{
		{0, "error"}, {1, "error"}, {2, "error"}, {3, "error"}, {4, "warn"}, {5, "info"}, {6, "info"}, {7, "debug"},
	} {
		rec, err := kmsglog.ParseRecord([]byte("0,42,1500,-;x\n"), boot)
		if err != nil {
			t.Fatal(err)
		}

		rec.Priority = tc.prio

		got, err := rec.JSON()
		if err != nil {
			t.Fatal(err)
		}

		want := `{"clock":1500,"facility":"kern","msg":"x\n","priority":"` + []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}[tc.prio] +
			`","seq":42,"talos-level":"` + tc.level + `","talos-time":"2025-01-02T03:04:05.0015Z"}`
		if string(got) != want {
			t.Errorf("priority %d:\ngot  %s\nwant %s", tc.prio, got, want)
		}
	}
}
