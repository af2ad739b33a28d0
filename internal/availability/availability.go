// Package availability measures what a client saw while a cluster changed
// under it: a probe run at a fixed interval, and the outages among its
// samples. The end-to-end tests use it to put a number on "the cluster
// stayed available" (a control plane reset, a shared IP moving).
package availability

import (
	"fmt"
	"strings"
	"time"
)

// Sample is one probe: whether the client was served, and if not, why.
type Sample struct {
	At     time.Time
	Served bool
	Why    string
}

// Outage is a run of samples that were not served.
type Outage struct {
	Start  time.Time
	Length time.Duration
	Why    string // the first failed sample's reason
}

// Sampler probes in a goroutine of its own until Stop.
type Sampler struct {
	samples []Sample
	stop    chan struct{}
	done    chan struct{}
}

// Start probes at once, then every interval.
func Start(interval time.Duration, probe func() (served bool, why string)) *Sampler {
	s := &Sampler{stop: make(chan struct{}), done: make(chan struct{})}

	go func() {
		defer close(s.done)

		tick := time.NewTicker(interval)
		defer tick.Stop()

		for {
			served, why := probe()
			s.samples = append(s.samples, Sample{At: time.Now(), Served: served, Why: why})

			select {
			case <-s.stop:
				return
			case <-tick.C:
			}
		}
	}()

	return s
}

// Stop ends the probing after the probe under way and returns every sample.
func (s *Sampler) Stop() []Sample {
	close(s.stop)
	<-s.done

	return s.samples
}

// Result is what a sampler saw: every sample, and the outages among them.
type Result struct {
	Samples []Sample
	Outages []Outage
	Longest time.Duration
}

// Report stops s and logs where each outage began (since start) and why:
// the lines a test's log wants beside its summary.
func (s *Sampler) Report(start time.Time, logf func(format string, args ...any)) Result {
	r := Result{Samples: s.Stop()}
	r.Outages = Outages(r.Samples)
	r.Longest = Longest(r.Outages)

	for _, o := range r.Outages {
		logf("outage at +%s: %s", o.Start.Sub(start).Round(100*time.Millisecond), o.Why)
	}

	return r
}

// Outages lists the runs of failed samples. One still open at the last
// sample ends there: its length is what was seen of it.
func Outages(samples []Sample) []Outage {
	var (
		out  []Outage
		open *Outage
	)

	for _, s := range samples {
		switch {
		case !s.Served && open == nil:
			open = &Outage{Start: s.At, Why: s.Why}
		case s.Served && open != nil:
			open.Length = s.At.Sub(open.Start)
			out = append(out, *open)
			open = nil
		}
	}

	if open != nil {
		open.Length = samples[len(samples)-1].At.Sub(open.Start)
		out = append(out, *open)
	}

	return out
}

// Longest is the longest outage, 0 for none.
func Longest(outages []Outage) time.Duration {
	var longest time.Duration
	for _, o := range outages {
		longest = max(longest, o.Length)
	}

	return longest
}

// Describe writes outages as "since+length" from start, for a test's log:
// [8.5s+3.2s 40.1s+0.5s].
func Describe(outages []Outage, start time.Time) string {
	parts := make([]string, len(outages))
	for i, o := range outages {
		parts[i] = fmt.Sprintf("%s+%s", o.Start.Sub(start).Round(100*time.Millisecond), o.Length.Round(100*time.Millisecond))
	}

	return "[" + strings.Join(parts, " ") + "]"
}

// LastLine is the last non-empty line of out, cut to 200 bytes: a probe's
// reason from a command's output.
func LastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	l := lines[len(lines)-1]

	if len(l) > 200 {
		l = l[:200]
	}

	return l
}
