package supervisor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// Stop stops a started service and waits until its goroutine is gone
// (the service is then Finished, or Failed if it failed while stopping).
// A service that is not started is left alone. If ctx ends first, the
// stop goes on in the background and ctx's error is returned.
func (s *Supervisor) Stop(ctx context.Context, id string) error {
	s.mu.Lock()
	svc := s.services[id]

	var h *runHandle
	if svc != nil {
		h = svc.run
	}

	s.mu.Unlock()

	switch {
	case svc == nil:
		return fmt.Errorf("stop: %w", unknown(id))
	case h == nil:
		return nil
	}

	h.cancel()

	select {
	case <-h.done:
		return nil
	default:
	}

	select {
	case <-h.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopping service %q: %w", id, ctx.Err())
	}
}

// Restart stops the service if it is started, then starts it.
func (s *Supervisor) Restart(ctx context.Context, id string) error {
	if err := s.Stop(ctx, id); err != nil {
		return fmt.Errorf("restart: %w", err)
	}

	return s.Start(id)
}

// StopAll stops every service, dependents before the services they depend
// on, independent ones in parallel. Each stop gets StopTimeout; one that
// overruns is reported in the error and no longer holds up the services it
// depends on. Stop order shows in the events and on the console.
func (s *Supervisor) StopAll(ctx context.Context) error {
	s.mu.Lock()

	ids := slices.Sorted(maps.Keys(s.services))
	dependents := make(map[string][]string, len(ids))

	for _, id := range ids {
		for _, dep := range s.services[id].spec.DependsOn {
			if s.services[dep] != nil {
				dependents[dep] = append(dependents[dep], id)
			}
		}
	}

	s.mu.Unlock()

	stopped := make(map[string]chan struct{}, len(ids))
	for _, id := range ids {
		stopped[id] = make(chan struct{})
	}

	var wg sync.WaitGroup

	errs := make([]error, len(ids)) // one slot each: no lock needed

	for i, id := range ids {
		wg.Go(func() {
			defer close(stopped[id])

			for _, d := range dependents[id] {
				select {
				case <-stopped[d]:
				case <-ctx.Done():
				}
			}

			sctx, cancel := context.WithTimeout(ctx, s.opts.StopTimeout)
			defer cancel()

			errs[i] = s.Stop(sctx, id)
		})
	}

	wg.Wait()

	return errors.Join(errs...)
}

// WaitUp waits until every service in ids (all loaded services if ids is
// nil) is up: Running and, if it has a health check, healthy; or Finished
// or Skipped. It fails at once for an unknown ID or a Failed service.
func (s *Supervisor) WaitUp(ctx context.Context, ids ...string) error {
	if ids == nil {
		s.mu.Lock()
		ids = slices.Sorted(maps.Keys(s.services))
		s.mu.Unlock()
	}

	for {
		pending, changed, err := s.pendingUp(ids)
		if err != nil || len(pending) == 0 {
			return err
		}

		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for services %q to be up: %w", pending, ctx.Err())
		}
	}
}

func (s *Supervisor) pendingUp(ids []string) ([]string, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	var pending []string

	for _, id := range ids {
		svc := s.services[id]

		switch {
		case svc == nil:
			return nil, nil, fmt.Errorf("wait: %w", unknown(id))
		case svc.upLocked():
			continue
		case svc.state == Failed:
			return nil, nil, fmt.Errorf("service %q failed: %s", id, svc.events.last(1)[0].Message)
		}

		pending = append(pending, id)
	}

	return pending, s.changed, nil
}
