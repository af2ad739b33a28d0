package discovery_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/discovery"
)

// TestAffiliateColumns: get prints the resource ID (the node ID) for every
// resource already; an affiliate column of its own printed it twice.
func TestAffiliateColumns(t *testing.T) {
	for _, d := range discovery.Definitions {
		if d.Type != discovery.AffiliateType {
			continue
		}

		var names []string
		for _, c := range d.PrintColumns {
			names = append(names, c.Name)

			if c.Name == "ID" || c.JSONPath == "{.nodeId}" {
				t.Fatalf("affiliate columns %v repeat the ID", names)
			}
		}

		return
	}

	t.Fatal("no affiliate definition")
}
