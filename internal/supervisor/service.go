package supervisor

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/talosbox/talosbox/internal/logring"
)

// RestartPolicy says what happens when a service's runner returns.
type RestartPolicy int

// Restart policies, in Talos's order (Forever is the zero value).
const (
	// Forever restarts after any exit.
	Forever RestartPolicy = iota
	// Once never restarts.
	Once
	// UntilSuccess restarts after failures until a run exits cleanly.
	UntilSuccess
)

func (p RestartPolicy) String() string {
	switch p {
	case Forever:
		return "Forever"
	case Once:
		return "Once"
	case UntilSuccess:
		return "UntilSuccess"
	}

	return "Unknown"
}

// Restart backoff defaults. Talos waits a fixed 5s; the interval doubles
// here so that a crash-looping service does not flood its log and events.
const (
	DefaultRestartInterval    = 5 * time.Second
	DefaultMaxRestartInterval = time.Minute
)

// HealthCheck probes a running service. Zero durations take Talos's
// defaults (DefaultHealthInitialDelay, DefaultHealthPeriod,
// DefaultHealthTimeout).
type HealthCheck struct {
	// Func must return once its context is done: the supervisor waits for
	// it before it considers a run over.
	Func         func(ctx context.Context) error
	InitialDelay time.Duration
	Period       time.Duration
	Timeout      time.Duration
	// StartupPeriod, when set, is the period until the first successful
	// check: a daemon that opens its socket a moment after it starts is
	// then healthy within that moment, not a whole Period later.
	StartupPeriod time.Duration
}

// Health check defaults, as in Talos.
const (
	DefaultHealthInitialDelay = time.Second
	DefaultHealthPeriod       = 5 * time.Second
	DefaultHealthTimeout      = 500 * time.Millisecond
)

// Service describes one supervised service.
type Service struct {
	ID string
	// DependsOn lists services that must be up (Running, and healthy when
	// they have a health check; or Finished or Skipped) before this one
	// starts. They need not be loaded yet.
	DependsOn []string
	// Conditions must all be met before the service starts. Their Wait
	// must return once its context is done.
	Conditions []Condition
	// Runner runs the service; nil makes the service Skipped.
	Runner  Runner
	Restart RestartPolicy
	// RestartInterval is the first restart delay (DefaultRestartInterval
	// if zero); each further restart doubles it up to MaxRestartInterval
	// (DefaultMaxRestartInterval if zero). A run that lasted at least
	// MaxRestartInterval starts the sequence over.
	RestartInterval    time.Duration
	MaxRestartInterval time.Duration
	// Health, if set, is checked while the service is Running.
	Health *HealthCheck
}

func (svc Service) withDefaults() Service {
	svc.DependsOn = append([]string(nil), svc.DependsOn...)
	svc.Conditions = append([]Condition(nil), svc.Conditions...)
	svc.RestartInterval = cmp.Or(svc.RestartInterval, DefaultRestartInterval)
	svc.MaxRestartInterval = max(cmp.Or(svc.MaxRestartInterval, DefaultMaxRestartInterval), svc.RestartInterval)

	if svc.Health != nil {
		hc := *svc.Health
		hc.InitialDelay = cmp.Or(hc.InitialDelay, DefaultHealthInitialDelay)
		hc.Period = cmp.Or(hc.Period, DefaultHealthPeriod)
		hc.Timeout = cmp.Or(hc.Timeout, DefaultHealthTimeout)
		svc.Health = &hc
	}

	return svc
}

func (svc *Service) validate() error {
	if svc.ID == "" {
		return fmt.Errorf("service has no ID")
	}

	if svc.Health != nil && svc.Health.Func == nil {
		return fmt.Errorf("service %q: health check has no Func", svc.ID)
	}

	if svc.Restart < Forever || svc.Restart > UntilSuccess {
		return fmt.Errorf("service %q: unknown restart policy %d", svc.ID, svc.Restart)
	}

	return nil
}

// service is a loaded Service and its run-time state.
type service struct {
	spec Service
	ring *logring.Ring

	// Guarded by Supervisor.mu.
	state  State
	health Health
	events eventRing
	run    *runHandle // the goroutine running the service, nil when none
}

// runHandle controls one started service goroutine.
type runHandle struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// upLocked reports whether dependents may start. Caller holds
// Supervisor.mu.
func (svc *service) upLocked() bool {
	switch svc.state {
	case Finished, Skipped:
		return true
	case Running:
		return svc.spec.Health == nil || (!svc.health.Unknown && svc.health.Healthy)
	}

	return false
}

func (svc *service) statusLocked() Status {
	return Status{ID: svc.spec.ID, State: svc.state, Health: svc.health, Events: svc.events.last(MaxEvents)}
}
