package supervisor

import (
	"context"
	"fmt"
	"io"
	"time"
)

// runHealth checks hc until ctx ends: after InitialDelay, then every
// Period, each check bounded by Timeout. report gets every result.
func runHealth(ctx context.Context, hc *HealthCheck, report func(error)) {
	t := time.NewTimer(hc.InitialDelay)
	defer t.Stop()

	up := false

	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}

		err := checkOnce(ctx, hc)
		if ctx.Err() != nil {
			return // a check cut short by the stop says nothing about health
		}

		report(err)

		if err == nil {
			up = true
		}

		if !up && hc.StartupPeriod > 0 {
			t.Reset(hc.StartupPeriod)
		} else {
			t.Reset(hc.Period)
		}
	}
}

func checkOnce(ctx context.Context, hc *HealthCheck) error {
	cctx, cancel := context.WithTimeout(ctx, hc.Timeout)
	defer cancel()

	err := callRecovering(io.Discard, func() error { return hc.Func(cctx) })
	if err == nil && cctx.Err() != nil {
		// Success reported after the deadline is still too slow.
		return fmt.Errorf("health check took longer than %s", hc.Timeout)
	}

	return err
}

// setHealth records a check result. Only a change between healthy and
// unhealthy (or the first result of a run) is an event; a new error text
// on a still failing service just updates LastMessage.
func (s *Supervisor) setHealth(svc *service, err error) {
	s.update(svc, func(now time.Time) (Event, bool) {
		if svc.state != Running {
			return Event{}, false
		}

		healthy := err == nil

		var msg string
		if err != nil {
			msg = err.Error()
		}

		if !svc.health.Unknown && svc.health.Healthy == healthy {
			svc.health.LastMessage = msg
			return Event{}, false
		}

		svc.health = Health{Healthy: healthy, LastMessage: msg, LastChange: now}

		text := "Health check successful"
		if !healthy {
			text = "Health check failed: " + msg
		}

		return Event{Message: text, State: Running, Health: svc.health, Timestamp: now}, true
	})
}
