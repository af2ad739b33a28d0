package dashboard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/gdamore/tcell/v2/terminfo"

	"github.com/talosbox/talosbox/internal/client"
)

// ConsoleOptions say where the node's own dashboard is shown.
type ConsoleOptions struct {
	// TTY is the terminal device (/dev/tty2, as Talos; /dev/ttyS1).
	TTY string
	// Term is its terminfo name ("linux" for a virtual terminal).
	Term string
	// Socket is apid's local socket, which serves the node as os:reader.
	Socket string
	// Interval between polls; DefaultInterval when zero.
	Interval time.Duration
	// Width and Height are used when the terminal does not say its size
	// (a serial line): 120x40 when zero.
	Width, Height int
}

// RunConsole shows the dashboard of this node on a terminal device until
// ctx ends. The node is read through apid's local socket, like any
// client, so the console shows what `talosctl dashboard` shows.
func RunConsole(ctx context.Context, opts ConsoleOptions) error {
	ti, err := terminfo.LookupTerminfo(opts.Term)
	if err != nil {
		return fmt.Errorf("dashboard: terminal %q: %w", opts.Term, err)
	}

	dev, err := tcell.NewDevTtyFromDev(opts.TTY)
	if err != nil {
		return fmt.Errorf("dashboard: %s: %w", opts.TTY, err)
	}

	screen, err := tcell.NewTerminfoScreenFromTtyTerminfo(sizedTty{Tty: dev, w: or(opts.Width, 120), h: or(opts.Height, 40)}, ti)
	if err != nil {
		return fmt.Errorf("dashboard: %s: %w", opts.TTY, err)
	}

	c, err := client.NewLocal(opts.Socket)
	if err != nil {
		return err
	}
	defer c.Close() //nolint:errcheck

	reach := func(ctx context.Context, _ string) (context.Context, *client.Client) { return ctx, c }

	err = Run(ctx, screen, Options{Sources: APISources(nil, reach), Interval: opts.Interval})
	if errors.Is(err, context.Canceled) {
		return nil
	}

	return err
}

// sizedTty is a terminal that reports a size when the device has none (a
// serial line answers TIOCGWINSZ with 0x0, and the dashboard would draw
// nothing).
type sizedTty struct {
	tcell.Tty
	w, h int
}

func (t sizedTty) WindowSize() (tcell.WindowSize, error) {
	ws, err := t.Tty.WindowSize()
	if err != nil || ws.Width == 0 || ws.Height == 0 {
		return tcell.WindowSize{Width: t.w, Height: t.h}, nil
	}

	return ws, nil
}

func or(v, def int) int {
	if v == 0 {
		return def
	}

	return v
}
