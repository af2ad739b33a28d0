package check

import (
	"slices"
	"testing"
)

func TestCompareAddrs(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"10.5.0.10", "10.5.0.9", "10.5.0.2"}, []string{"10.5.0.2", "10.5.0.9", "10.5.0.10"}},
		{[]string{"node-b", "10.5.0.3", "node-a", "fd00::1", "10.5.0.2"}, []string{"10.5.0.2", "10.5.0.3", "fd00::1", "node-a", "node-b"}},
	} {
		got := slices.Clone(tc.in)
		slices.SortFunc(got, CompareAddrs)

		if !slices.Equal(got, tc.want) {
			t.Errorf("sort %v = %v, want %v", tc.in, got, tc.want)
		}
	}
}
