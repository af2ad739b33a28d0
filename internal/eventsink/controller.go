package eventsink

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/talosbox/talosbox/configs"
	apievents "github.com/talosbox/talosbox/internal/api/events"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/events"
	"github.com/talosbox/talosbox/internal/resources/config"
)

// Controller publishes the node's events to the endpoint of the machine
// config's EventSinkConfig, as Talos's EventsSinkController: the watch
// starts with the first endpoint, from the oldest event retained, and is
// kept for the controller's life, so an endpoint that changes or comes
// back gets what it missed (as far as the stream still holds it). An
// event the sink does not take is published again with a growing delay,
// holding back the ones after it.
type Controller struct {
	// Events is the node's event stream.
	Events *events.Ring
}

// Name implements bus.Controller.
func (*Controller) Name() string { return "runtime.EventsSinkController" }

// Inputs implements bus.Controller.
func (*Controller) Inputs() []bus.Input {
	return []bus.Input{{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID}}
}

// Outputs implements bus.Controller.
func (*Controller) Outputs() []bus.Output { return nil }

// The delays between publishing attempts of one event, and how long one
// attempt may take.
const (
	retryMin       = time.Second
	retryMax       = 30 * time.Second
	publishTimeout = 30 * time.Second
)

// Endpoint is the event sink cfg names, "" for none.
func Endpoint(cfg *configs.Config) string {
	if d := configs.DocumentOf[*configs.EventSinkConfig](cfg); d != nil {
		return d.Endpoint
	}

	return ""
}

// Run implements bus.Controller.
func (c *Controller) Run(ctx context.Context, r bus.ControllerRuntime) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		endpoint string
		conn     *grpc.ClientConn
		client   apievents.EventSinkServiceClient
		watch    <-chan events.Event
		pending  *apievents.EventRequest
		retry    *time.Timer
		retryC   <-chan time.Time
		delay    = retryMin
		failing  bool
	)

	defer func() {
		if conn != nil {
			conn.Close()
		}

		if retry != nil {
			retry.Stop()
		}
	}()

	for {
		in := watch
		if pending != nil || client == nil {
			in = nil
		}

		select {
		case <-ctx.Done():
			return nil
		case <-r.EventCh():
			ep, err := c.endpoint(ctx, r)
			if err != nil {
				return err
			}

			if ep != endpoint {
				if conn != nil {
					conn.Close()
					conn, client = nil, nil
				}

				endpoint = ep

				if ep != "" {
					// Plain gRPC, as Talos dials its sink; the connection
					// is made (and made again) by the client as needed.
					if conn, err = grpc.NewClient("passthrough:///"+ep, grpc.WithTransportCredentials(insecure.NewCredentials())); err != nil {
						return fmt.Errorf("event sink %s: %w", ep, err)
					}

					client = apievents.NewEventSinkServiceClient(conn)
					r.Logger().Info("event sink: publishing to " + ep)

					if watch == nil {
						watch = c.Events.Watch(ctx, events.WatchOptions{TailEvents: -1})
					}
				}
			}

			r.ResetRestartBackoff()

			if retry != nil {
				retry.Stop()
			}

			retryC, delay = nil, retryMin
		case ev, ok := <-in:
			if !ok {
				return nil
			}

			req, err := Request(ev)
			if errors.Is(err, errNoTalosType) {
				continue
			}

			if err != nil {
				r.Logger().Error("event sink: event not published", "id", ev.ID, "error", err)

				continue
			}

			pending, delay = req, retryMin
		case <-retryC:
			retryC = nil
		}

		if pending == nil || client == nil {
			continue
		}

		pctx, pcancel := context.WithTimeout(ctx, publishTimeout)
		_, err := client.Publish(pctx, pending)

		pcancel()

		if err == nil {
			if failing {
				r.Logger().Info("event sink: publishing again", "endpoint", endpoint)
			}

			pending, delay, failing = nil, retryMin, false

			continue
		}

		if ctx.Err() != nil {
			return nil
		}

		if !failing {
			r.Logger().Info("event sink: publish failed, retrying", "endpoint", endpoint, "id", pending.GetId(), "error", err)
			failing = true
		}

		retry = time.NewTimer(delay)
		retryC = retry.C
		delay = min(2*delay, retryMax)
	}
}

// endpoint reads the sink's endpoint from the active config.
func (c *Controller) endpoint(ctx context.Context, r bus.ControllerRuntime) (string, error) {
	mc, err := bus.GetAs[*config.MachineConfig](ctx, r, bus.Pointer{Namespace: config.NamespaceConfig, Type: config.MachineConfigType, ID: config.ActiveConfigID})
	if bus.IsNotFound(err) {
		return "", nil
	}

	if err != nil {
		return "", fmt.Errorf("machine config: %w", err)
	}

	return Endpoint(mc.TypedSpec().Config), nil
}
