package supervisor

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/talosbox/talosbox/internal/reaper"
)

// logDrainTimeout bounds how long a finished run waits for its log pipe to
// reach EOF: a descendant that left the process group may hold it open.
const logDrainTimeout = time.Second

// Run starts the process and waits for it. It returns nil when the
// process was stopped through ctx, whatever its exit status.
func (p *processRunner) Run(ctx context.Context, log io.Writer) error {
	if ctx.Err() != nil {
		return nil
	}

	// An *os.File as Stdout/Stderr is handed to the child as is; with any
	// other writer os/exec's Wait would also wait for every descendant
	// holding the pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("creating log pipe for %s: %w", p, err)
	}

	defer pr.Close()

	cmd := &exec.Cmd{
		Path:   p.opts.Path,
		Args:   p.argv(),
		Env:    p.opts.Env,
		Dir:    p.opts.Dir,
		Stdout: pw,
		Stderr: pw,
	}

	cgroup, err := p.setSysProcAttr(cmd)
	if err == nil {
		// Through the reaper, so that PID 1's zombie collection never
		// takes this child's exit status from cmd.Wait.
		err = reaper.StartCommand(cmd)
	}

	// From here on only the child holds the write end, so the log copy
	// ends when the child's group is gone.
	pw.Close()

	if cgroup != nil {
		cgroup.Close()
	}

	if err != nil {
		return fmt.Errorf("starting %s: %w", p, err)
	}

	pid := cmd.Process.Pid
	copied := make(chan struct{})

	go func() {
		defer close(copied)
		drain(log, pr)
	}()

	Report(ctx, Running, fmt.Sprintf("Process %s started with PID %d", p, pid))

	st := &processStopper{ctx: ctx, p: p, pgid: pid}
	cancelStop := context.AfterFunc(ctx, st.terminate)
	waitErr := cmd.Wait()

	reaper.Done(pid)
	st.exited()
	cancelStop()

	// The service owns its process group: nothing the leader left behind
	// may outlive it, or every restart would add orphans.
	_ = syscall.Kill(-pid, syscall.SIGKILL)

	_ = pr.SetReadDeadline(time.Now().Add(logDrainTimeout))
	<-copied

	if ctx.Err() != nil {
		return nil
	}

	if waitErr != nil {
		return fmt.Errorf("process %d exited: %w", pid, waitErr)
	}

	return nil
}

// setSysProcAttr puts the child in its own process group, makes it die
// with machined, and applies credentials and the cgroup. The returned
// cgroup directory must be closed once the child has started.
func (p *processRunner) setSysProcAttr(cmd *exec.Cmd) (*os.File, error) {
	// Pdeathsig fires when the forking OS thread exits; Go retires a
	// thread only when a goroutine exits while locked to it, which
	// machined code must not do.
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.SysProcAttr = attr

	if p.opts.UID != nil || p.opts.GID != nil {
		cred := &syscall.Credential{Uid: uint32(os.Getuid()), Gid: uint32(os.Getgid())}
		if p.opts.UID != nil {
			cred.Uid = *p.opts.UID
		}

		if p.opts.GID != nil {
			cred.Gid = *p.opts.GID
		}

		attr.Credential = cred
	}

	if p.opts.Cgroup == "" {
		return nil, nil
	}

	// CLONE_INTO_CGROUP: the child never runs, even briefly, outside its
	// cgroup, unlike writing the PID to cgroup.procs after the fork.
	dir, err := os.OpenFile(p.opts.Cgroup, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening cgroup: %w", err)
	}

	attr.UseCgroupFD = true
	attr.CgroupFD = int(dir.Fd())

	return dir, nil
}

// processStopper escalates from SIGTERM to SIGKILL. Its mutex makes sure
// no signal is sent once Wait has reaped the leader, when the PID could
// be reused.
type processStopper struct {
	ctx  context.Context // only carries the reporter
	p    *processRunner
	pgid int

	mu   sync.Mutex
	done bool
	kill *time.Timer
}

func (s *processStopper) terminate() {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.done {
		return
	}

	Report(s.ctx, Stopping, fmt.Sprintf("Sending SIGTERM to %s", s.p))

	_ = syscall.Kill(-s.pgid, syscall.SIGTERM)
	s.kill = time.AfterFunc(s.p.opts.StopTimeout, s.forceKill)
}

func (s *processStopper) forceKill() {
	s.mu.Lock()
	defer s.mu.Unlock()

	if s.done {
		return
	}

	Report(s.ctx, Stopping, fmt.Sprintf("Sending SIGKILL to %s", s.p))

	_ = syscall.Kill(-s.pgid, syscall.SIGKILL)
}

func (s *processStopper) exited() {
	s.mu.Lock()
	defer s.mu.Unlock()

	s.done = true

	if s.kill != nil {
		s.kill.Stop()
	}
}

// drain copies the child's output to the log and keeps reading if the log
// fails, so the child never blocks on a full pipe.
func drain(log io.Writer, r io.Reader) {
	buf := make([]byte, 32<<10)

	var werr error

	for {
		n, err := r.Read(buf)
		if n > 0 && werr == nil {
			_, werr = log.Write(buf[:n])
		}

		if err != nil {
			return
		}
	}
}
