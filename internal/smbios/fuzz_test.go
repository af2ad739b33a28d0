package smbios_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/smbios"
	"github.com/talosbox/talosbox/internal/smbios/smbiostest"
)

// FuzzParse feeds arbitrary entry points and tables to the parser: it
// must answer a table or an error, never panic. Most mutated entry points
// fail their checksum, so each table is also parsed behind a valid one.
func FuzzParse(f *testing.F) {
	for _, m := range machines() {
		f.Add(m.ep, m.table)
	}

	valid3 := smbiostest.EntryPoint3(3, 3, 0, 1<<16, 0)
	valid2 := smbiostest.EntryPoint2(2, 8, 64, 0, 0)

	f.Fuzz(func(t *testing.T, ep, table []byte) {
		for _, e := range [][]byte{ep, valid3, valid2} {
			s, err := smbios.Parse(e, table)
			if (s == nil) == (err == nil) {
				t.Fatalf("result %v with error %v", s, err)
			}

			if err != nil {
				continue
			}

			for _, st := range s.Structures {
				if len(st.Formatted) < 4 || len(st.Formatted) > len(table) {
					t.Fatalf("structure of %d bytes from a table of %d", len(st.Formatted), len(table))
				}
			}
		}
	})
}
