package supervisor

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// DefaultProcessStopTimeout is how long a process gets between SIGTERM
// and SIGKILL when ProcessOptions.StopTimeout is zero (Talos's default).
const DefaultProcessStopTimeout = 10 * time.Second

// ProcessOptions describe a child process.
type ProcessOptions struct {
	// Path is the program; it is not looked up in PATH, so give it in
	// full (a relative path is taken from Dir).
	Path string
	// Args are the arguments after the program name; argv[0] is Path.
	Args []string
	// Env is the environment; nil inherits machined's.
	Env []string
	Dir string
	// UID and GID switch the child's credentials when set; supplementary
	// groups are then dropped.
	UID, GID *uint32
	// Cgroup is a cgroup2 directory the child is created in (optional).
	Cgroup string
	// StopTimeout is the time between SIGTERM and SIGKILL on stop
	// (DefaultProcessStopTimeout if zero).
	StopTimeout time.Duration
}

type processRunner struct {
	opts ProcessOptions
}

// ProcessRunner runs a child process in its own process group with
// stdout and stderr going to the service log. The child gets SIGKILL if
// machined dies. Stopping sends SIGTERM to the group and SIGKILL after
// StopTimeout; when the child exits, whatever is left of its group is
// killed so restarts never accumulate orphans.
func ProcessRunner(opts ProcessOptions) Runner {
	opts.Args = slices.Clone(opts.Args)
	opts.Env = slices.Clone(opts.Env)
	opts.StopTimeout = cmp.Or(opts.StopTimeout, DefaultProcessStopTimeout)

	return &processRunner{opts: opts}
}

func (*processRunner) ReportsStart() {}

func (p *processRunner) argv() []string {
	return append([]string{p.opts.Path}, p.opts.Args...)
}

func (p *processRunner) String() string {
	return fmt.Sprintf("Process(%q)", p.argv())
}
