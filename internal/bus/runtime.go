package bus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"
)

// RuntimeOptions tune a Runtime; the zero value gives the defaults.
type RuntimeOptions struct {
	Logger *slog.Logger
	// BackoffMin and BackoffMax bound the exponential delay before a
	// failed controller is restarted (100 ms and 30 s by default).
	BackoffMin time.Duration
	BackoffMax time.Duration
}

// ControllerStatus is what the runtime knows about one controller.
type ControllerStatus struct {
	Name      string
	Running   bool
	Restarts  int
	LastError string
}

// Runtime runs controllers against a Store: it wakes them when their
// inputs change, restarts them with backoff when they fail or panic, and
// refuses writes outside their declared outputs.
type Runtime struct {
	store *Store
	opts  RuntimeOptions

	mu      sync.Mutex
	ctrls   []*ctrlState
	writers map[string][]Output // output type -> declarations
	owners  map[string][]string // output type -> controller names
	started bool
}

type ctrlState struct {
	c Controller
	a *adapter

	mu     sync.Mutex
	status ControllerStatus
}

// NewRuntime makes a runtime over store.
func NewRuntime(store *Store, opts RuntimeOptions) *Runtime {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}

	if opts.BackoffMin <= 0 {
		opts.BackoffMin = 100 * time.Millisecond
	}

	if opts.BackoffMax < opts.BackoffMin {
		opts.BackoffMax = max(30*time.Second, opts.BackoffMin)
	}

	return &Runtime{store: store, opts: opts, writers: map[string][]Output{}, owners: map[string][]string{}}
}

// Register adds a controller before Run. Its name must be unique and its
// outputs must not clash: an exclusive output type has exactly one writer.
func (rt *Runtime) Register(c Controller) error {
	rt.mu.Lock()
	defer rt.mu.Unlock()

	name := c.Name()

	if rt.started {
		return fmt.Errorf("register controller %q: the runtime is already running", name)
	}

	if name == "" {
		return errors.New("register controller: empty name")
	}

	for _, cs := range rt.ctrls {
		if cs.c.Name() == name {
			return fmt.Errorf("register controller %q: already registered", name)
		}
	}

	inputs := c.Inputs()
	for _, in := range inputs {
		if in.Namespace == "" || in.Type == "" {
			return fmt.Errorf("register controller %q: input %+v needs a namespace and a type", name, in)
		}
	}

	outputs := c.Outputs()
	for _, out := range outputs {
		for i, prev := range rt.writers[out.Type] {
			if out.Kind == OutputExclusive || prev.Kind == OutputExclusive {
				return fmt.Errorf("register controller %q: output %s is already written by %q; an exclusive output has one writer",
					name, out.Type, rt.owners[out.Type][i])
			}
		}
	}

	for _, out := range outputs {
		rt.writers[out.Type] = append(rt.writers[out.Type], out)
		rt.owners[out.Type] = append(rt.owners[out.Type], name)
	}

	rt.ctrls = append(rt.ctrls, &ctrlState{
		c: c,
		a: &adapter{
			store:   rt.store,
			name:    name,
			inputs:  inputs,
			outputs: outputs,
			events:  make(chan struct{}, 1),
			log:     rt.opts.Logger.With("controller", name),
		},
		status: ControllerStatus{Name: name},
	})

	return nil
}

// Run starts every registered controller and blocks until ctx ends and all
// of them have returned.
func (rt *Runtime) Run(ctx context.Context) error {
	rt.mu.Lock()
	if rt.started {
		rt.mu.Unlock()
		return errors.New("runtime: already running")
	}

	rt.started = true
	ctrls := rt.ctrls
	rt.mu.Unlock()

	var wg sync.WaitGroup

	for _, cs := range ctrls {
		var cancels []func()
		for _, in := range cs.a.inputs {
			cancels = append(cancels, rt.store.subscribe(Kind{Namespace: in.Namespace, Type: in.Type}, in.ID, cs.a.events))
		}

		wg.Go(func() {
			defer func() {
				for _, cancel := range cancels {
					cancel()
				}
			}()

			rt.supervise(ctx, cs)
		})
	}

	wg.Wait()

	return nil
}

// Status reports every controller, in registration order.
func (rt *Runtime) Status() []ControllerStatus {
	rt.mu.Lock()
	ctrls := rt.ctrls
	rt.mu.Unlock()

	out := make([]ControllerStatus, len(ctrls))
	for i, cs := range ctrls {
		cs.mu.Lock()
		out[i] = cs.status
		cs.mu.Unlock()
	}

	return out
}

// ControllerDependencies is what one controller declared it reads and
// writes.
type ControllerDependencies struct {
	Name    string
	Inputs  []Input
	Outputs []Output
}

// Dependencies is every controller's declared inputs and outputs, in
// registration order: the graph `talosctl inspect dependencies` draws.
func (rt *Runtime) Dependencies() []ControllerDependencies {
	rt.mu.Lock()
	ctrls := rt.ctrls
	rt.mu.Unlock()

	out := make([]ControllerDependencies, len(ctrls))
	for i, cs := range ctrls {
		out[i] = ControllerDependencies{Name: cs.c.Name(), Inputs: slices.Clone(cs.c.Inputs()), Outputs: slices.Clone(cs.c.Outputs())}
	}

	return out
}

func (rt *Runtime) supervise(ctx context.Context, cs *ctrlState) {
	backoff := rt.opts.BackoffMin
	log := cs.a.log

	log.Info("controller starting")

	for {
		cs.a.QueueReconcile() // every (re)start reconciles once without waiting for a change
		cs.setRunning(true, nil)

		err := runGuarded(ctx, cs)

		if ctx.Err() != nil {
			cs.setRunning(false, nil)
			return
		}

		if err == nil {
			log.Info("controller finished")
			cs.setRunning(false, nil)

			return
		}

		if cs.a.reset.Swap(false) {
			backoff = rt.opts.BackoffMin
		}

		log.Error("controller failed; restarting", "error", err, "backoff", backoff)
		cs.setRunning(false, err)

		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}

		backoff = min(backoff*2, rt.opts.BackoffMax)
	}
}

func runGuarded(ctx context.Context, cs *ctrlState) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("controller %q panicked: %v\n%s", cs.c.Name(), p, debug.Stack())
		}
	}()

	return cs.c.Run(ctx, cs.a)
}

func (cs *ctrlState) setRunning(running bool, err error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()

	cs.status.Running = running
	if err != nil {
		cs.status.Restarts++
		cs.status.LastError = err.Error()
	}
}
