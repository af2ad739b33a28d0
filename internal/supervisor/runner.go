package supervisor

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// Runner runs a service. Run returns when the service ends by itself or,
// after ctx is cancelled, once it has stopped; a run stopped that way
// should return nil (or an error wrapping context.Canceled). log is the
// service's log ring.
type Runner interface {
	Run(ctx context.Context, log io.Writer) error
}

// StartReporter is implemented by runners that report Running themselves,
// with Report, once the service has really started: a process has a PID
// only after it was forked. The supervisor marks other runners Running
// just before it calls Run.
type StartReporter interface {
	Runner
	ReportsStart()
}

type reporterKey struct{}

type reporter interface {
	report(state State, message string)
}

// Report records a state change of the service whose Runner got ctx, e.g.
// Running "Process ... started with PID 42" or Stopping "Sending SIGTERM
// to ...". Outside a supervised run it does nothing.
func Report(ctx context.Context, state State, message string) {
	if r, ok := ctx.Value(reporterKey{}).(reporter); ok {
		r.report(state, message)
	}
}

// describe names a runner in restart messages the way Talos does, e.g.
// `Goroutine("apid")` or `Process(["/bin/sh" "-c" "..."])`.
func describe(r Runner, id string) string {
	switch v := r.(type) {
	case goroutineRunner:
		return fmt.Sprintf("Goroutine(%q)", id)
	case fmt.Stringer:
		return v.String()
	}

	return fmt.Sprintf("Runner(%q)", id)
}

// callRecovering runs fn and turns a panic into an error, with the stack
// written to log: a panicking service must fail, not take down machined,
// which is PID 1.
func callRecovering(log io.Writer, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(log, "panic: %v\n\n%s", p, debug.Stack())

			err = fmt.Errorf("panic: %v", p)
		}
	}()

	return fn()
}
