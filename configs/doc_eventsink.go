package configs

// EventSinkConfig is Talos's EventSinkConfig: the node pushes every event
// of its event stream (what talosctl events shows) to a gRPC event sink
// (EventSinkService.Publish) at endpoint, as Talos does; a sink that is
// down gets the events it missed when it is back, as far as the node's
// event ring still holds them. Talos's talos.events.sink= kernel argument
// is the other way to ask; v1alpha1 has nothing for it.
type EventSinkConfig struct {
	// Endpoint is host:port, reached over plain gRPC (no TLS), as in Talos.
	Endpoint string `yaml:"endpoint"`
}

// Kind implements Document.
func (*EventSinkConfig) Kind() string { return "EventSinkConfig" }

func (e *EventSinkConfig) check(v *validator, path string) {
	if e.Endpoint == "" {
		v.errorf(path+".endpoint", "endpoint is required: the event sink's host:port (192.168.10.3:3247)")

		return
	}

	if err := checkHostPort("event sink endpoint", e.Endpoint); err != nil {
		v.errorf(path+".endpoint", "%v (192.168.10.3:3247, [fd00::1]:3247)", err)
	}
}

// fold: nothing in v1alpha1 says it.
func (*EventSinkConfig) fold(*folding) {}
