// Package supervisor runs machined's services the way Talos's system
// package does: each service waits for its dependencies and conditions,
// runs as a goroutine or a child process, is restarted by policy, is
// health-checked, and has its state mirrored to the console, to a log ring
// and to a Services resource on the bus.
//
// Every started service has exactly one goroutine of its own; it exists
// from Start until the service reaches Finished, Failed or Skipped.
// Helpers (condition waits, health checks, process bookkeeping) live only
// as long as the phase that needs them and are joined before it ends.
package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/logring"
)

// DefaultStopTimeout is how long StopAll waits for each service.
const DefaultStopTimeout = 30 * time.Second

// ErrUnknownService is wrapped by errors about IDs that were never loaded.
var ErrUnknownService = errors.New("unknown service")

// Options configure a Supervisor.
type Options struct {
	// Store receives a Services resource per service; nil disables them.
	Store *bus.Store
	// Console gets one line per event: "[talos] service[ID](State): message".
	Console io.Writer
	// LogSize is each service's log ring size (logring.DefaultSize if 0).
	LogSize int
	// StopTimeout bounds each service's stop in StopAll
	// (DefaultStopTimeout if 0).
	StopTimeout time.Duration
	// Now stamps events (time.Now if nil).
	Now func() time.Time
	// OnEvent, if set, sees every event once it is recorded, in the
	// order they happened (machined forwards them to its event stream).
	// Events wait for it, so it must be quick, and it may only read:
	// Load, Start, Stop, Restart and StopAll would deadlock.
	OnEvent func(id string, ev Event)
}

// Supervisor owns the services of one machined.
type Supervisor struct {
	opts Options

	// pubMu is held from choosing an event until it has reached the
	// console, the bus and OnEvent. Events are thereby published in one
	// order everywhere, and an event caused by another (a dependent
	// starting once its dependency is up) is never published before it.
	pubMu sync.Mutex

	mu       sync.Mutex
	services map[string]*service
	// changed is closed and replaced on every event, waking everything
	// that waits for some service to reach some state.
	changed chan struct{}
}

// New makes a supervisor without services.
func New(opts Options) *Supervisor {
	if opts.Console == nil {
		opts.Console = io.Discard
	}

	if opts.Now == nil {
		opts.Now = time.Now
	}

	opts.StopTimeout = cmp.Or(opts.StopTimeout, DefaultStopTimeout)

	return &Supervisor{opts: opts, services: map[string]*service{}, changed: make(chan struct{})}
}

// Load adds services in state Initialized. IDs must be new, and the
// dependencies, including those on already loaded services, must not form
// a cycle. Nothing is loaded when an error is returned.
func (s *Supervisor) Load(svcs ...Service) error {
	s.mu.Lock()

	batch := make(map[string]*Service, len(svcs))

	for i := range svcs {
		svc := &svcs[i]
		if err := svc.validate(); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("load: %w", err)
		}

		if _, ok := s.services[svc.ID]; ok || batch[svc.ID] != nil {
			s.mu.Unlock()
			return fmt.Errorf("load: service %q is already loaded", svc.ID)
		}

		batch[svc.ID] = svc
	}

	dependsOn := func(id string) []string {
		if svc := batch[id]; svc != nil {
			return svc.DependsOn
		}

		if svc := s.services[id]; svc != nil {
			return svc.spec.DependsOn
		}

		return nil
	}

	if cycle := findCycle(dependsOn, slices.Sorted(maps.Keys(batch))); cycle != nil {
		s.mu.Unlock()
		return fmt.Errorf("load: dependency cycle %q", cycle)
	}

	added := make([]*service, 0, len(svcs))

	for _, spec := range svcs {
		svc := &service{spec: spec.withDefaults(), ring: logring.New(s.opts.LogSize), state: Initialized, health: unknownHealth}
		s.services[spec.ID] = svc
		added = append(added, svc)
	}

	s.mu.Unlock()

	for _, svc := range added {
		s.publishInitial(svc)
	}

	return nil
}

func (s *Supervisor) publishInitial(svc *service) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()

	s.mu.Lock()
	spec := svc.specLocked()
	s.mu.Unlock()

	s.storeResource(svc.spec.ID, spec)
}

// findCycle returns a dependency cycle reachable from roots, as the path
// that closes it, or nil. Only new services can close a cycle, so the
// roots are the services being loaded.
func findCycle(dependsOn func(string) []string, roots []string) []string {
	const (
		visiting = 1
		visited  = 2
	)

	color := map[string]int{}

	var (
		path  []string
		visit func(string) []string
	)

	visit = func(id string) []string {
		switch color[id] {
		case visiting:
			return append(slices.Clone(path[slices.Index(path, id):]), id)
		case visited:
			return nil
		}

		color[id] = visiting
		path = append(path, id)

		for _, dep := range dependsOn(id) {
			if cycle := visit(dep); cycle != nil {
				return cycle
			}
		}

		path = path[:len(path)-1]
		color[id] = visited

		return nil
	}

	for _, id := range roots {
		if cycle := visit(id); cycle != nil {
			return cycle
		}
	}

	return nil
}

func unknown(id string) error {
	return fmt.Errorf("service %q: %w", id, ErrUnknownService)
}

// Start starts the services that are not already started and returns
// without waiting for them; each records Starting before Start returns.
// An unknown ID starts nothing.
func (s *Supervisor) Start(ids ...string) error {
	s.mu.Lock()

	for _, id := range ids {
		if s.services[id] == nil {
			s.mu.Unlock()
			return fmt.Errorf("start: %w", unknown(id))
		}
	}

	type launch struct {
		svc *service
		ctx context.Context // handed to the service goroutine
		h   *runHandle
	}

	var launches []launch

	for _, id := range ids {
		svc := s.services[id]
		if svc.run != nil {
			continue
		}

		ctx, cancel := context.WithCancel(context.Background())
		svc.run = &runHandle{cancel: cancel, done: make(chan struct{})}
		launches = append(launches, launch{svc, ctx, svc.run})
	}

	s.mu.Unlock()

	for _, l := range launches {
		// Recorded here, not in the goroutine, so that a WaitUp right
		// after Start never mistakes the previous run's Finished for up.
		s.setState(l.svc, Starting, "Starting service")

		go s.run(l.ctx, l.svc, l.h)
	}

	return nil
}

// StartAll starts every loaded service.
func (s *Supervisor) StartAll() error {
	s.mu.Lock()
	ids := slices.Sorted(maps.Keys(s.services))
	s.mu.Unlock()

	return s.Start(ids...)
}

// Status returns a snapshot of one service.
func (s *Supervisor) Status(id string) (Status, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()

	svc := s.services[id]
	if svc == nil {
		return Status{}, false
	}

	return svc.statusLocked(), true
}

// List returns every service's status, sorted by ID.
func (s *Supervisor) List() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()

	out := make([]Status, 0, len(s.services))
	for _, id := range slices.Sorted(maps.Keys(s.services)) {
		out = append(out, s.services[id].statusLocked())
	}

	return out
}

// Logs returns the service's log ring, which outlives its runs.
func (s *Supervisor) Logs(id string) (*logring.Ring, error) {
	s.mu.Lock()
	defer s.mu.Unlock()

	svc := s.services[id]
	if svc == nil {
		return nil, fmt.Errorf("logs: %w", unknown(id))
	}

	return svc.ring, nil
}

// update records the event fn chooses, if any, and publishes it. fn runs
// under s.mu and may change the service's state and health.
func (s *Supervisor) update(svc *service, fn func(now time.Time) (Event, bool)) {
	s.pubMu.Lock()
	defer s.pubMu.Unlock()

	s.mu.Lock()

	ev, ok := fn(s.opts.Now())
	if !ok {
		s.mu.Unlock()
		return
	}

	svc.events.push(ev)
	spec := svc.specLocked()

	s.mu.Unlock()

	fmt.Fprintf(s.opts.Console, "[talos] service[%s](%s): %s\n", svc.spec.ID, ev.State, ev.Message)
	s.storeResource(svc.spec.ID, spec)

	// Waiters wake only once the resource says what they will see: a
	// WaitUp that returns before the store would let a reader of the
	// Services resources see the old state.
	s.mu.Lock()
	s.broadcastLocked()
	s.mu.Unlock()

	if s.opts.OnEvent != nil {
		s.opts.OnEvent(svc.spec.ID, ev)
	}
}

// setState moves the service to state. Health starts over as unknown
// whenever a run enters or leaves Running.
func (s *Supervisor) setState(svc *service, state State, message string) {
	s.update(svc, func(now time.Time) (Event, bool) {
		return svc.enterLocked(state, message, now), true
	})
}

// enterLocked moves the service to state and returns the event saying so.
// Caller holds Supervisor.mu.
func (svc *service) enterLocked(state State, message string, now time.Time) Event {
	if state != Running || svc.state != Running {
		svc.health = unknownHealth
	}

	svc.state = state

	return Event{Message: message, State: state, Health: svc.health, Timestamp: now}
}

func (s *Supervisor) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}
