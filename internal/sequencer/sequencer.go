// Package sequencer runs a node's lifecycle sequences (Initialize, Boot,
// Reboot, Shutdown, Reset) the way Talos does: a sequence is a list of
// phases run in order, and the tasks inside one phase run in parallel.
// Every task is named, timed and logged, so a slow or failing boot says
// exactly where it is.
package sequencer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
)

// TaskFunc does one step of a sequence. It may log to w.
type TaskFunc func(ctx context.Context, w io.Writer) error

// Task is a named step.
type Task struct {
	Name string
	Func TaskFunc
}

// Phase is a group of tasks that run in parallel.
type Phase struct {
	Name  string
	Tasks []Task
}

// Sequence is an ordered list of phases.
type Sequence struct {
	Name   string
	Phases []Phase
}

// Append adds a phase with its tasks; it returns the sequence to allow
// chaining in declarative lists.
func (s *Sequence) Append(name string, tasks ...Task) *Sequence {
	s.Phases = append(s.Phases, Phase{Name: name, Tasks: tasks})
	return s
}

// AppendWhen adds the phase only when cond holds.
func (s *Sequence) AppendWhen(cond bool, name string, tasks ...Task) *Sequence {
	if cond {
		s.Append(name, tasks...)
	}

	return s
}

// Runner executes sequences, logging to Console as Talos does:
// "[talos] task NAME (i/n): starting" and "... done in 12ms".
type Runner struct {
	Console io.Writer
	Now     func() time.Time
	// Observe, when set, hears every sequence, phase and task transition
	// (kind "sequence", "phase" or "task"; action "start", "stop" or
	// "fail"), for the node's event stream.
	Observe func(kind, name, action string, err error)

	mu sync.Mutex // keeps parallel tasks' lines whole
}

func (r *Runner) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}

	return time.Now()
}

func (r *Runner) logf(format string, args ...any) {
	if r.Console == nil {
		return
	}

	r.mu.Lock()
	defer r.mu.Unlock()

	fmt.Fprintf(r.Console, "[talos] "+format+"\n", args...)
}

func (r *Runner) observe(kind, name, action string, err error) {
	if r.Observe != nil {
		r.Observe(kind, name, action, err)
	}
}

// lockedWriter prefixes nothing but serializes task output with the
// runner's own lines.
type lockedWriter struct{ r *Runner }

func (l lockedWriter) Write(p []byte) (int, error) {
	if l.r.Console == nil {
		return len(p), nil
	}

	l.r.mu.Lock()
	defer l.r.mu.Unlock()

	return l.r.Console.Write(p)
}

// Run executes the sequence. A failing task stops the sequence after its
// phase finishes; the error names the phase and task.
func (r *Runner) Run(ctx context.Context, seq *Sequence) error {
	start := r.now()
	total := 0

	for _, p := range seq.Phases {
		total += len(p.Tasks)
	}

	r.logf("%s sequence: %d phase(s)", seq.Name, len(seq.Phases))
	r.observe("sequence", seq.Name, "start", nil)

	n := 0

	for i, p := range seq.Phases {
		r.logf("phase %s (%d/%d): %d task(s)", p.Name, i+1, len(seq.Phases), len(p.Tasks))
		r.observe("phase", p.Name, "start", nil)
		phaseStart := r.now()

		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)

		for _, t := range p.Tasks {
			n++
			idx := n

			wg.Go(func() {
				if err := r.runTask(ctx, t, idx, total); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("phase %s: task %s: %w", p.Name, t.Name, err))
					mu.Unlock()
				}
			})
		}

		wg.Wait()

		if err := errors.Join(errs...); err != nil {
			r.logf("phase %s (%d/%d): failed", p.Name, i+1, len(seq.Phases))
			r.logf("%s sequence: failed", seq.Name)
			r.observe("phase", p.Name, "fail", err)
			r.observe("sequence", seq.Name, "fail", err)

			return fmt.Errorf("%s sequence: %w", seq.Name, err)
		}

		r.logf("phase %s (%d/%d): done in %s", p.Name, i+1, len(seq.Phases), round(r.now().Sub(phaseStart)))
		r.observe("phase", p.Name, "stop", nil)

		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s sequence: %w", seq.Name, err)
		}
	}

	r.logf("%s sequence: done in %s", seq.Name, round(r.now().Sub(start)))
	r.observe("sequence", seq.Name, "stop", nil)

	return nil
}

func (r *Runner) runTask(ctx context.Context, t Task, idx, total int) (err error) {
	r.logf("task %s (%d/%d): starting", t.Name, idx, total)
	r.observe("task", t.Name, "start", nil)
	start := r.now()

	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}

		if err != nil {
			r.logf("task %s (%d/%d): failed: %v", t.Name, idx, total, err)
			r.observe("task", t.Name, "fail", err)

			return
		}

		r.logf("task %s (%d/%d): done in %s", t.Name, idx, total, round(r.now().Sub(start)))
		r.observe("task", t.Name, "stop", nil)
	}()

	return t.Func(ctx, lockedWriter{r})
}

// round keeps log lines readable: whole milliseconds, or microseconds below one.
func round(d time.Duration) time.Duration {
	if d >= time.Millisecond {
		return d.Round(time.Millisecond)
	}

	return d.Round(time.Microsecond)
}
