package bus

import (
	"errors"
	"fmt"
)

// Sentinel errors; test for them with errors.Is.
var (
	ErrNotFound          = errors.New("not found")
	ErrAlreadyExists     = errors.New("already exists")
	ErrVersionConflict   = errors.New("version conflict")
	ErrOwnerConflict     = errors.New("owner conflict")
	ErrPhaseConflict     = errors.New("phase conflict")
	ErrPendingFinalizers = errors.New("finalizers pending")
	ErrWatchOverrun      = errors.New("watch overrun: the watcher fell too far behind")
	ErrNotDeclared       = errors.New("not declared by the controller")
	ErrInvalid           = errors.New("invalid request")
)

// Error describes a failed operation on one resource or kind.
type Error struct {
	Op     string // "create", "update", ...
	Target string // a Pointer or Kind rendered as text
	Err    error  // one of the sentinels
	Detail string // what exactly was wrong
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%s %s: %v", e.Op, e.Target, e.Err)
	}

	return fmt.Sprintf("%s %s: %v: %s", e.Op, e.Target, e.Err, e.Detail)
}

func (e *Error) Unwrap() error { return e.Err }

func opError(op string, p Pointer, err error, format string, args ...any) error {
	e := &Error{Op: op, Target: p.String(), Err: err}
	if format != "" {
		e.Detail = fmt.Sprintf(format, args...)
	}

	return e
}

// IsNotFound reports whether err means the resource does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// IsConflict reports whether err is a version conflict.
func IsConflict(err error) bool { return errors.Is(err, ErrVersionConflict) }
