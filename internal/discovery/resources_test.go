package discovery_test

import (
	"testing"

	"github.com/talosbox/talosbox/internal/resources/cluster"
)

// TestAffiliateColumns: get prints the resource ID (the node ID) for every
// resource already; an affiliate column of its own printed it twice.
func TestAffiliateColumns(t *testing.T) {
	for _, d := range cluster.Definitions {
		if d.Type != cluster.AffiliateType {
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
