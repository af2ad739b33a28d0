package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

var errSkipped = errors.New("service skipped")

// run is the goroutine of a started service. Its last event is always
// Finished, Failed or Skipped.
func (s *Supervisor) run(ctx context.Context, svc *service, h *runHandle) {
	defer func() {
		h.cancel()
		close(h.done)
	}()

	state, msg := Finished, "Service finished successfully"

	switch err := s.runService(ctx, svc); {
	case errors.Is(err, errSkipped):
		state, msg = Skipped, "Service skipped"
	case err != nil:
		state, msg = Failed, capitalize(err.Error())
	}

	// The final event and the release of the handle are one step, so a
	// Start by someone who saw the final state is never ignored.
	s.update(svc, func(now time.Time) (Event, bool) {
		if svc.run == h {
			svc.run = nil
		}

		return svc.enterLocked(state, msg, now), true
	})
}

// runService goes through Talos's phases. Being stopped at any point is a
// clean finish.
func (s *Supervisor) runService(ctx context.Context, svc *service) error {
	if err := s.waitReady(ctx, svc); err != nil {
		if ctx.Err() != nil {
			return nil
		}

		return fmt.Errorf("condition failed: %w", err)
	}

	if ctx.Err() != nil {
		return nil
	}

	// There is no pre-start hook; the messages are kept because
	// `talosctl service` users look for them.
	s.setState(svc, Preparing, "Running pre state")
	s.setState(svc, Preparing, "Creating service runner")

	if svc.spec.Runner == nil {
		return errSkipped
	}

	return s.runLoop(ctx, svc)
}

type condResult struct {
	i   int
	err error
}

// waitReady waits for dependencies and conditions, re-rendering the
// Waiting message whenever the set of unmet ones changes. Dependencies are
// checked on every event of any service; conditions each wait in a helper
// goroutine that is joined before waitReady returns.
func (s *Supervisor) waitReady(ctx context.Context, svc *service) error {
	conds := svc.spec.Conditions
	if len(svc.spec.DependsOn) == 0 && len(conds) == 0 {
		return nil
	}

	met := make([]bool, len(conds))
	results := make(chan condResult, len(conds))
	wctx, cancel := context.WithCancel(ctx)

	var wg sync.WaitGroup

	defer func() {
		cancel()
		wg.Wait()
	}()

	for i, c := range conds {
		wg.Go(func() { results <- condResult{i, c.Wait(wctx)} })
	}

	var last string

	for {
		unmet, changed := s.unmet(svc, met)
		if unmet == "" {
			return nil
		}

		if unmet != last {
			s.setState(svc, Waiting, "Waiting for "+unmet)
			last = unmet
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case r := <-results:
			if r.err != nil {
				return r.err
			}

			met[r.i] = true
		case <-changed:
		}
	}
}

// unmet renders what svc still waits for, e.g. `service "cri" to be "up",
// etcd spec`, and returns the channel that signals the next event.
func (s *Supervisor) unmet(svc *service, met []bool) (string, <-chan struct{}) {
	var parts []string

	s.mu.Lock()

	for _, dep := range svc.spec.DependsOn {
		if d := s.services[dep]; d == nil || !d.upLocked() {
			parts = append(parts, fmt.Sprintf("service %q to be \"up\"", dep))
		}
	}

	changed := s.changed

	s.mu.Unlock()

	for i, c := range svc.spec.Conditions {
		if !met[i] {
			parts = append(parts, c.String())
		}
	}

	return strings.Join(parts, ", "), changed
}

// runLoop runs the service until its restart policy says it is done.
func (s *Supervisor) runLoop(ctx context.Context, svc *service) error {
	spec := &svc.spec
	name := describe(spec.Runner, spec.ID)
	restarts := 0

	for {
		started := time.Now()
		err := s.runOnce(ctx, svc)

		if ctx.Err() != nil {
			if err != nil && !errors.Is(err, context.Canceled) {
				return fmt.Errorf("failed running service: %w", err)
			}

			return nil
		}

		var msg string

		switch spec.Restart {
		case Once:
			if err != nil {
				return fmt.Errorf("failed running service: %w", err)
			}

			return nil
		case UntilSuccess:
			if err == nil {
				return nil
			}

			msg = fmt.Sprintf("Error running %s, going to restart until it succeeds: %v", name, err)
		case Forever:
			if err == nil {
				msg = fmt.Sprintf("Runner %s exited without error, going to restart it", name)
			} else {
				msg = fmt.Sprintf("Error running %s, going to restart forever: %v", name, err)
			}
		}

		s.setState(svc, Waiting, msg)

		if time.Since(started) >= spec.MaxRestartInterval {
			restarts = 0 // it ran fine for a good while: not a crash loop
		}

		delay := backoff(spec.RestartInterval, spec.MaxRestartInterval, restarts)
		restarts++

		if !sleep(ctx, delay) {
			s.setState(svc, Stopping, "Aborting restart sequence")
			return nil
		}
	}
}

// backoff is base doubled n times, capped at limit.
func backoff(base, limit time.Duration, n int) time.Duration {
	d := base
	for range n {
		if d >= limit/2 {
			return limit
		}

		d *= 2
	}

	return min(d, limit)
}

// sleep waits d and reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()

	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// runOnce does one run of the runner, with health checks while it is
// Running.
func (s *Supervisor) runOnce(ctx context.Context, svc *service) error {
	a := &attempt{s: s, svc: svc, ctx: ctx}
	defer a.end()

	r := svc.spec.Runner
	if _, ok := r.(StartReporter); !ok {
		a.report(Running, "Service started")
	}

	rctx := context.WithValue(ctx, reporterKey{}, a)

	return callRecovering(svc.ring, func() error { return r.Run(rctx, svc.ring) })
}

// attempt is one run of a runner: it receives the runner's reports and
// owns the health checker of that run.
type attempt struct {
	s   *Supervisor
	svc *service
	ctx context.Context // the run's context, parent of the health checker

	mu         sync.Mutex
	over       bool // reports after the run are stale: drop them
	stopHealth context.CancelFunc
	healthDone chan struct{}
}

func (a *attempt) report(state State, message string) {
	a.mu.Lock()
	defer a.mu.Unlock()

	if a.over {
		return
	}

	a.s.setState(a.svc, state, message)

	hc := a.svc.spec.Health
	if state != Running || hc == nil || a.healthDone != nil {
		return
	}

	hctx, cancel := context.WithCancel(a.ctx)
	done := make(chan struct{})
	a.stopHealth, a.healthDone = cancel, done

	go func() {
		defer close(done)
		runHealth(hctx, hc, a.healthResult)
	}()
}

func (a *attempt) healthResult(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()

	if !a.over {
		a.s.setHealth(a.svc, err)
	}
}

// end closes the attempt and waits for its health checker.
func (a *attempt) end() {
	a.mu.Lock()
	a.over = true
	stop, done := a.stopHealth, a.healthDone
	a.mu.Unlock()

	if stop != nil {
		stop()
		<-done
	}
}

// capitalize turns an error into an event message, as Talos does.
func capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}

	return string(unicode.ToUpper(r)) + s[n:]
}
