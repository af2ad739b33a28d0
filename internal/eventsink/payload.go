// Package eventsink pushes the node's events to a gRPC event sink, as
// Talos does for an EventSinkConfig (and its talos.events.sink= kernel
// argument): every event of the node's event stream, from the oldest the
// stream still holds, each published with Talos's EventSinkService as the
// Talos message it is (machine.SequenceEvent, machine.ServiceStateEvent,
// ...) packed in a google.protobuf.Any.
package eventsink

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/talosbox/talosbox/internal/api/common"
	apievents "github.com/talosbox/talosbox/internal/api/events"
	"github.com/talosbox/talosbox/internal/api/machine"
	"github.com/talosbox/talosbox/internal/events"
)

// errNoTalosType is an event with no Talos message (talosbox's own, such
// as the EventsDropped a slow watcher gets): it is not published.
var errNoTalosType = errors.New("no Talos event message for this event")

// Request is the EventSinkService request for ev: its ID and its Talos
// message.
func Request(ev events.Event) (*apievents.EventRequest, error) {
	msg, err := Payload(ev)
	if err != nil {
		return nil, err
	}

	data, err := anypb.New(msg)
	if err != nil {
		return nil, fmt.Errorf("event %s: %w", ev.ID, err)
	}

	return &apievents.EventRequest{Id: ev.ID, Data: data}, nil
}

// Payload is the Talos message of one event of the node's stream.
func Payload(ev events.Event) (proto.Message, error) {
	f := ev.Fields

	switch ev.Type {
	case events.TypeSequence:
		out := &machine.SequenceEvent{Sequence: f["sequence"], Action: machine.SequenceEvent_START}

		// Talos reports a failed sequence as its stop, with the error.
		if f["action"] != "start" {
			out.Action = machine.SequenceEvent_STOP
		}

		if e := f["error"]; e != "" {
			out.Error = &common.Error{Code: common.Code_FATAL, Message: e}
		}

		return out, nil
	case events.TypePhase:
		return &machine.PhaseEvent{Phase: f["phase"], Action: map[bool]machine.PhaseEvent_Action{
			true: machine.PhaseEvent_START, false: machine.PhaseEvent_STOP,
		}[f["action"] == "start"]}, nil
	case events.TypeTask:
		return &machine.TaskEvent{Task: f["task"], Action: map[bool]machine.TaskEvent_Action{
			true: machine.TaskEvent_START, false: machine.TaskEvent_STOP,
		}[f["action"] == "start"]}, nil
	case events.TypeServiceState:
		// The states are Talos's, by name.
		action, ok := machine.ServiceStateEvent_Action_value[strings.ToUpper(f["state"])]
		if !ok {
			return nil, fmt.Errorf("event %s: service state %q is not one of Talos's", ev.ID, f["state"])
		}

		return &machine.ServiceStateEvent{Service: f["service"], Action: machine.ServiceStateEvent_Action(action), Message: ev.Message}, nil
	case events.TypeConfigLoadError:
		return &machine.ConfigLoadErrorEvent{Error: ev.Message}, nil
	}

	return nil, fmt.Errorf("event %s of type %s: %w", ev.ID, ev.Type, errNoTalosType)
}
