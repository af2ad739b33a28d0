//go:build !linux

package supervisor

import (
	"context"
	"errors"
	"io"
)

// Run fails: process groups, parent-death signals and cgroups are what
// make the process runner safe, and they are Linux-only.
func (p *processRunner) Run(context.Context, io.Writer) error {
	return errors.New("the process runner needs Linux")
}
