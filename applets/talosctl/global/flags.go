package global

import (
	"fmt"

	"github.com/talosbox/talosbox/internal/applet"
)

// Args are the flags every talosctl command accepts.
type Args struct {
	Env applet.Env

	Talosconfig string
	Context     string
	Nodes       []string
	Endpoints   []string
}

// ExitError carries an exit status chosen by a command that has already
// printed its own message.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit status %d", e.Code) }
