package configs_test

import (
	"testing"

	"github.com/talosbox/talosbox/configs"
)

const eventSinkDoc = "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: 192.168.10.3:3247\n"

func TestEventSinkConfig(t *testing.T) {
	t.Parallel()

	obsDecode(t, []obsDecodeCase{
		{name: "good", docs: eventSinkDoc},
		{
			name: "an unknown field",
			docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoints: [a:1]\n",
			want: `line +3: unknown field "endpoints" in EventSinkConfig (did you mean "endpoint"?)`,
		},
		{
			name: "an endpoint of the wrong type",
			docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: {host: a}\n",
			want: `line +3: EventSinkConfig.endpoint: expected a single value, got a mapping`,
		},
	})

	obsCheck(t, []obsCheckCase{
		{name: "host:port", docs: eventSinkDoc},
		{name: "a name and IPv6", docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: '[fd00::1]:3247'\n---\napiVersion: v1alpha1\nkind: HostnameConfig\nauto: stable\n"},
		{name: "in a container too", mode: configs.ModeContainer, docs: eventSinkDoc},
		{
			name: "no endpoint",
			docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\n",
			want: []string{`line +2: EventSinkConfig.endpoint: endpoint is required: the event sink's host:port (192.168.10.3:3247)`},
		},
		{
			name: "no port",
			docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: 192.168.10.3\n",
			want: []string{`line +3: EventSinkConfig.endpoint: invalid event sink endpoint "192.168.10.3": expected host:port (192.168.10.3:3247, [fd00::1]:3247)`},
		},
		{
			name: "a URL",
			docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: grpc://192.168.10.3:3247\n",
			want: []string{`line +3: EventSinkConfig.endpoint: invalid event sink endpoint "grpc://192.168.10.3:3247": expected host:port (192.168.10.3:3247, [fd00::1]:3247)`},
		},
		{
			name: "no host",
			docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: ':3247'\n",
			want: []string{`line +3: EventSinkConfig.endpoint: invalid event sink endpoint ":3247": host is missing (192.168.10.3:3247, [fd00::1]:3247)`},
		},
		{
			name: "a bad port",
			docs: "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: a:70000\n",
			want: []string{`line +3: EventSinkConfig.endpoint: invalid event sink endpoint "a:70000": invalid port "70000" (192.168.10.3:3247, [fd00::1]:3247)`},
		},
	})

	t.Run("fold", func(t *testing.T) {
		t.Parallel()

		cfg := obsDecoded(t, eventSinkDoc)
		if d := configs.DocumentOf[*configs.EventSinkConfig](cfg); d == nil || d.Endpoint != "192.168.10.3:3247" {
			t.Errorf("DocumentOf: %+v", d)
		}

		if changes, err := configs.Compare(obsDecoded(t, ""), configs.NewConfig(cfg.V1Alpha1())); err != nil || len(changes) != 0 {
			t.Errorf("the effective v1alpha1 fields changed: %v %v", changes, err)
		}

		obsChange(t, eventSinkDoc, "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: 10.0.0.1:3247\n", "EventSinkConfig.endpoint", true)
	})

	t.Run("encode", func(t *testing.T) {
		t.Parallel()

		obsRoundTrip(t, "endpoint: 192.168.10.3:3247\nkind: EventSinkConfig\napiVersion: v1alpha1\n", eventSinkDoc)
	})

	t.Run("patch", func(t *testing.T) {
		t.Parallel()

		cfg := obsPatched(t, eventSinkDoc, "apiVersion: v1alpha1\nkind: EventSinkConfig\nendpoint: 10.0.0.1:1\n")
		if d := configs.DocumentOf[*configs.EventSinkConfig](cfg); d == nil || d.Endpoint != "10.0.0.1:1" {
			t.Errorf("strategic merge: %+v", d)
		}

		cfg = obsPatched(t, eventSinkDoc, `[{"op": "replace", "path": "/EventSinkConfig/endpoint", "value": "10.0.0.2:2"}]`)
		if d := configs.DocumentOf[*configs.EventSinkConfig](cfg); d == nil || d.Endpoint != "10.0.0.2:2" {
			t.Errorf("JSON patch: %+v", d)
		}
	})
}
