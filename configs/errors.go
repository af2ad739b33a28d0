package configs

import (
	"fmt"
	"strings"
)

// DecodeError is one problem found while decoding, located by source line.
// Path names the config element concerned (for an unknown field, the element
// that does not know it), so tools can point at it without parsing Msg.
type DecodeError struct {
	Line int
	Path string
	Msg  string
}

func (e *DecodeError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}

	return e.Msg
}

// ValidationError is one problem found by Validate. Validation runs on decoded
// values, which no longer carry source lines, so the path alone locates it.
type ValidationError struct {
	Path string
	Msg  string
	// Line is where Path was written, when the config came with its
	// Positions (0 otherwise, or for an element never written).
	Line int
	// Warning marks a warning promoted to an error by strict validation.
	Warning bool
}

func (e *ValidationError) Error() string {
	msg := e.Msg
	if e.Path != "" {
		msg = e.Path + ": " + msg
	}

	// The same shape as DecodeError: "line 12: machine.files[0].path: ...".
	if e.Line > 0 {
		msg = fmt.Sprintf("line %d: %s", e.Line, msg)
	}

	if e.Warning {
		return "warning: " + msg
	}

	return msg
}

// Errors is the list of every problem found in one pass. Its message follows
// hashicorp/go-multierror, which Talos uses, so tools and people reading
// talosctl output see the same shape.
type Errors struct {
	List []error
}

func (e *Errors) Error() string {
	points := make([]string, len(e.List))
	for i, err := range e.List {
		points[i] = "* " + err.Error()
	}

	if len(points) == 1 {
		return fmt.Sprintf("1 error occurred:\n\t%s\n\n", points[0])
	}

	return fmt.Sprintf("%d errors occurred:\n\t%s\n\n", len(points), strings.Join(points, "\n\t"))
}

// Unwrap lets errors.As and errors.Is look at every listed problem.
func (e *Errors) Unwrap() []error {
	return e.List
}
