package kmsglog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// Controller delivers the kernel log to the endpoints of the machine
// config's KmsgLogConfig documents, as Talos's KmsgLogDeliveryController:
// each record goes to every endpoint at once, and is done when one took
// it; while none does, it is sent again with a growing delay (the kernel
// keeps what follows, as far as its ring holds it). The device is opened
// with the first endpoint and kept, so a config change loses no record.
type Controller struct {
	// Path is the kernel log device; DefaultPath when empty.
	Path string
}

// Name implements bus.Controller.
func (*Controller) Name() string { return "runtime.KmsgLogDeliveryController" }

// Inputs implements bus.Controller.
func (*Controller) Inputs() []bus.Input {
	return []bus.Input{{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID}}
}

// Outputs implements bus.Controller.
func (*Controller) Outputs() []bus.Output { return nil }

// Endpoints are the kernel log endpoints cfg names, each once, in the
// order written.
func Endpoints(cfg *configs.Config) []string {
	var out []string

	for _, d := range configs.DocumentsOf[*configs.KmsgLogConfig](cfg) {
		if !slices.Contains(out, d.URL) {
			out = append(out, d.URL)
		}
	}

	return out
}

type readResult struct {
	rec Record
	err error
}

// Run implements bus.Controller.
func (c *Controller) Run(ctx context.Context, r bus.ControllerRuntime) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	d := &delivery{log: r.Logger()}
	defer d.closeAll()

	var (
		records <-chan readResult
		pending *Record
		retry   *time.Timer
		retryC  <-chan time.Time
		delay   = retryMin
	)

	defer func() {
		if retry != nil {
			retry.Stop()
		}
	}()

	for {
		// A record waiting to be sent again holds the next one back.
		in := records
		if pending != nil || len(d.senders) == 0 {
			in = nil
		}

		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
			urls, err := c.endpoints(ctx, r)
			if err != nil {
				return err
			}

			d.set(urls)
			r.Logger().Info("kmsg log: sending to " + joinURLs(urls))

			if len(urls) > 0 && records == nil {
				rd, err := Open(c.Path)
				if err != nil {
					return err
				}

				defer rd.Close()

				records = pump(ctx, rd)
			}

			r.ResetRestartBackoff()

			// New endpoints get a waiting record at once.
			if retry != nil {
				retry.Stop()
			}

			retryC, delay = nil, retryMin
		case res := <-in:
			if res.err != nil {
				return res.err
			}

			pending, delay = &res.rec, retryMin
		case <-retryC:
			retryC = nil
		}

		if pending == nil || len(d.senders) == 0 {
			continue
		}

		if d.deliver(ctx, *pending) {
			pending, delay = nil, retryMin

			continue
		}

		retry = time.NewTimer(delay)
		retryC = retry.C
		delay = min(2*delay, retryMax)
	}
}

// endpoints reads the endpoints from the active config.
func (c *Controller) endpoints(ctx context.Context, r bus.ControllerRuntime) ([]*url.URL, error) {
	mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
	if bus.IsNotFound(err) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("machine config: %w", err)
	}

	var out []*url.URL

	for _, s := range Endpoints(mc.TypedSpec().Config) {
		u, err := url.Parse(s)
		if err != nil {
			// Validation refuses it before a config is in effect.
			r.Logger().Error("kmsg log: bad endpoint", "url", s, "error", err)

			continue
		}

		out = append(out, u)
	}

	return out, nil
}

func joinURLs(urls []*url.URL) string {
	if len(urls) == 0 {
		return "nowhere"
	}

	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = u.String()
	}

	return strings.Join(out, ", ")
}

// pump reads records into a channel until ctx ends or the reader fails.
func pump(ctx context.Context, rd *Reader) <-chan readResult {
	ch := make(chan readResult)

	context.AfterFunc(ctx, func() { rd.Close() })

	go func() {
		for {
			rec, err := rd.Next()
			if errors.Is(err, os.ErrClosed) || ctx.Err() != nil {
				return
			}

			select {
			case ch <- readResult{rec: rec, err: err}:
			case <-ctx.Done():
				return
			}

			if err != nil {
				return
			}
		}
	}()

	return ch
}

// delivery is the set of endpoints and their connections.
type delivery struct {
	log     *slog.Logger
	senders []*sender
	// down says which endpoints failed their last send, so a change of
	// state is logged once rather than at every retry.
	down map[string]bool
}

// set makes the endpoints urls, keeping the connections of those that
// stay.
func (d *delivery) set(urls []*url.URL) {
	var keep []*sender

	for _, u := range urls {
		i := slices.IndexFunc(d.senders, func(s *sender) bool { return s.endpoint.String() == u.String() })
		if i >= 0 {
			keep = append(keep, d.senders[i])
			d.senders = slices.Delete(d.senders, i, i+1)

			continue
		}

		keep = append(keep, &sender{endpoint: u})
	}

	d.closeAll()
	d.senders = keep
}

func (d *delivery) closeAll() {
	for _, s := range d.senders {
		s.close()
	}

	d.senders = nil
}

// deliver sends rec to every endpoint at once; it is done when one took
// it, or when it cannot be sent at all (it does not encode, or was partly
// written somewhere).
func (d *delivery) deliver(ctx context.Context, rec Record) bool {
	line, err := rec.JSON()
	if err != nil {
		d.log.Error("kmsg log: record not sent", "seq", rec.Seq, "error", err)

		return true
	}

	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()

	errs := make([]error, len(d.senders))

	var wg sync.WaitGroup

	for i, s := range d.senders {
		wg.Go(func() { errs[i] = s.send(sctx, slices.Clone(line)) })
	}

	wg.Wait()

	if d.down == nil {
		d.down = map[string]bool{}
	}

	done := ctx.Err() != nil

	for i, s := range d.senders {
		ep := s.endpoint.String()

		switch err := errs[i]; {
		case err == nil:
			done = true

			if d.down[ep] {
				d.log.Info("kmsg log: endpoint reachable again", "url", ep)
				delete(d.down, ep)
			}
		case errors.Is(err, errPartial):
			done = true

			d.log.Info("kmsg log: record partly sent, dropped", "url", ep, "seq", rec.Seq, "error", err)
		default:
			if !d.down[ep] {
				d.log.Info("kmsg log: endpoint unreachable, retrying", "url", ep, "error", err)
				d.down[ep] = true
			}
		}
	}

	return done
}
