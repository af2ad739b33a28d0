package supervisor

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// Listening is the health of a goroutine service that serves on a socket
// (apid, trustd): healthy while its listener is open and served, as
// Talos's services report OK once their port answers.
type Listening struct{ on atomic.Bool }

// Serving records that the listener is open (true) or closed (false).
func (l *Listening) Serving(on bool) { l.on.Store(on) }

var errNotListening = errors.New("not listening yet")

// Check is the service's HealthCheck: fast until the first success, so
// the service is healthy a moment after it listens, then Talos's period.
func (l *Listening) Check() *HealthCheck {
	return &HealthCheck{
		InitialDelay:  time.Millisecond,
		StartupPeriod: 50 * time.Millisecond,
		Func: func(context.Context) error {
			if !l.on.Load() {
				return errNotListening
			}

			return nil
		},
	}
}
