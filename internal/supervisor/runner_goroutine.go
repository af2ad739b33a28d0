package supervisor

import (
	"context"
	"errors"
	"io"
)

type goroutineRunner struct {
	fn func(ctx context.Context, log io.Writer) error
}

// GoroutineRunner runs fn in-process, on the service's goroutine. fn must
// return when ctx is cancelled. A panic in fn is written to the log and
// fails the service; the process survives.
func GoroutineRunner(fn func(ctx context.Context, log io.Writer) error) Runner {
	return goroutineRunner{fn: fn}
}

func (goroutineRunner) ReportsStart() {}

func (g goroutineRunner) Run(ctx context.Context, log io.Writer) error {
	Report(ctx, Running, "Service started as goroutine")

	err := callRecovering(log, func() error { return g.fn(ctx, log) })
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}

	return err
}
