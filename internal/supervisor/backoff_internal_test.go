package supervisor

import (
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	const ms = time.Millisecond

	for _, tc := range []struct {
		base, limit time.Duration
		n           int
		want        time.Duration
	}{
		{10 * ms, 80 * ms, 0, 10 * ms},
		{10 * ms, 80 * ms, 1, 20 * ms},
		{10 * ms, 80 * ms, 2, 40 * ms},
		{10 * ms, 80 * ms, 3, 80 * ms},
		{10 * ms, 80 * ms, 4, 80 * ms},
		{10 * ms, 50 * ms, 3, 50 * ms},
		{10 * ms, 80 * ms, 1000, 80 * ms}, // no overflow
		{5 * time.Second, time.Minute, 4, time.Minute},
	} {
		if got := backoff(tc.base, tc.limit, tc.n); got != tc.want {
			t.Errorf("backoff(%s, %s, %d) = %s, want %s", tc.base, tc.limit, tc.n, got, tc.want)
		}
	}
}

func TestCapitalize(t *testing.T) {
	for in, want := range map[string]string{"": "", "condition failed: x": "Condition failed: x", "état": "État"} {
		if got := capitalize(in); got != want {
			t.Errorf("capitalize(%q) = %q, want %q", in, got, want)
		}
	}
}
