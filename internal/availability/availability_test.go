package availability

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestOutages(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	for _, tc := range []struct {
		name    string
		samples []Sample
		want    string
		longest time.Duration
	}{
		{name: "none", samples: []Sample{{At: at(0), Served: true}, {At: at(500), Served: true}}, want: "[]"},
		{
			name: "two, the second longer",
			samples: []Sample{
				{At: at(0), Served: true}, {At: at(500), Why: "refused"}, {At: at(1000), Served: true},
				{At: at(1500), Why: "timeout"}, {At: at(2000)}, {At: at(2500)}, {At: at(3000), Served: true},
			},
			want: "[500ms+500ms 1.5s+1.5s]", longest: 1500 * time.Millisecond,
		},
		{
			name:    "still open at the end",
			samples: []Sample{{At: at(0), Served: true}, {At: at(500), Why: "down"}, {At: at(1500)}},
			want:    "[500ms+1s]", longest: time.Second,
		},
	} {
		o := Outages(tc.samples)
		if got := Describe(o, t0); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}

		if got := Longest(o); got != tc.longest {
			t.Errorf("%s: longest %s, want %s", tc.name, got, tc.longest)
		}

		if len(o) > 0 && o[0].Why == "" {
			t.Errorf("%s: the first outage has no reason", tc.name)
		}
	}
}

// The sampler probes until stopped and keeps every result in order; the
// probe's state is waited on, not slept on.
func TestSamplerKeepsEveryProbe(t *testing.T) {
	var calls atomic.Int32

	s := Start(time.Millisecond, func() (bool, string) {
		n := calls.Add(1)
		return n%2 == 1, "even"
	})

	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 5 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}

	samples := s.Stop()
	if len(samples) < 5 || int(calls.Load()) != len(samples) {
		t.Fatalf("%d samples from %d probes", len(samples), calls.Load())
	}

	for i, smp := range samples {
		if smp.Served != (i%2 == 0) || (i > 0 && smp.At.Before(samples[i-1].At)) {
			t.Fatalf("sample %d: %+v", i, smp)
		}
	}
}

func TestLastLine(t *testing.T) {
	if got := LastLine("a\nb\n\n"); got != "b" {
		t.Errorf("%q", got)
	}

	if got := LastLine(strings.Repeat("x", 300)); len(got) != 200 {
		t.Errorf("%d bytes", len(got))
	}
}

// Report stops the sampler, logs each outage with its reason, and sums up.
func TestReport(t *testing.T) {
	var calls atomic.Int32

	s := Start(time.Millisecond, func() (bool, string) {
		return calls.Add(1) > 2, "refused"
	})

	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 4 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}

	var lines []string

	res := s.Report(time.Now(), func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) })
	if len(res.Outages) != 1 || res.Longest <= 0 || len(res.Samples) < 4 {
		t.Fatalf("%+v", res)
	}

	if len(lines) != 1 || !strings.HasSuffix(lines[0], ": refused") {
		t.Errorf("logged %q", lines)
	}
}
