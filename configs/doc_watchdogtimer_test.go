package configs_test

import (
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

const watchdogDoc = "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: 2m0s\n"

func TestWatchdogTimerConfig(t *testing.T) {
	t.Parallel()

	obsDecode(t, []obsDecodeCase{
		{name: "good", docs: watchdogDoc},
		{name: "no timeout", docs: "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\n"},
		{
			name: "an unknown field",
			docs: "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ninterval: 10s\n",
			want: `line +4: unknown field "interval" in WatchdogTimerConfig`,
		},
		{
			name: "a timeout that is no duration",
			docs: "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: soon\n",
			want: `line +4: WatchdogTimerConfig.timeout: invalid duration "soon": expected a Go duration such as "30s" or "1h30m"`,
		},
	})

	obsCheck(t, []obsCheckCase{
		{name: "device and timeout", docs: watchdogDoc},
		{name: "the shortest timeout", docs: "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: 10s\n"},
		{
			name: "no device",
			docs: "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ntimeout: 1m\n",
			want: []string{`line +2: WatchdogTimerConfig.device: device is required: the watchdog's device node (/dev/watchdog0)`},
		},
		{
			name: "a timeout too short",
			docs: "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: 9s\n",
			want: []string{`line +4: WatchdogTimerConfig.timeout: timeout 9s is too short: the minimum is 10s (unset: 1m0s)`},
		},
		{
			name: "in a container",
			mode: configs.ModeContainer,
			docs: watchdogDoc,
			want: []string{`line +2: WatchdogTimerConfig: a container node has no hardware watchdog to feed: talosbox honours WatchdogTimerConfig on metal only`},
		},
	})

	t.Run("fold", func(t *testing.T) {
		t.Parallel()

		cfg := obsDecoded(t, watchdogDoc)

		d := configs.DocumentOf[*configs.WatchdogTimerConfig](cfg)
		if d == nil || d.Device != "/dev/watchdog0" || d.EffectiveTimeout() != 2*time.Minute {
			t.Errorf("DocumentOf: %+v", d)
		}

		if d := (&configs.WatchdogTimerConfig{}); d.EffectiveTimeout() != time.Minute {
			t.Errorf("the default timeout is %s, want Talos's 1m", d.EffectiveTimeout())
		}

		if changes, err := configs.Compare(obsDecoded(t, ""), configs.NewConfig(cfg.V1Alpha1())); err != nil || len(changes) != 0 {
			t.Errorf("the effective v1alpha1 fields changed: %v %v", changes, err)
		}

		obsChange(t, watchdogDoc, "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ndevice: /dev/watchdog0\ntimeout: 30s\n", "WatchdogTimerConfig.timeout", true)
	})

	t.Run("encode", func(t *testing.T) {
		t.Parallel()

		obsRoundTrip(t, "kind: WatchdogTimerConfig\ntimeout: 120s\ndevice: /dev/watchdog0\napiVersion: v1alpha1\n", watchdogDoc)
	})

	t.Run("patch", func(t *testing.T) {
		t.Parallel()

		cfg := obsPatched(t, watchdogDoc, "apiVersion: v1alpha1\nkind: WatchdogTimerConfig\ntimeout: 30s\n")
		if d := configs.DocumentOf[*configs.WatchdogTimerConfig](cfg); d == nil || d.Timeout != 30*time.Second || d.Device != "/dev/watchdog0" {
			t.Errorf("strategic merge: %+v", d)
		}

		cfg = obsPatched(t, watchdogDoc, `[{"op": "replace", "path": "/WatchdogTimerConfig/device", "value": "/dev/watchdog1"}]`)
		if d := configs.DocumentOf[*configs.WatchdogTimerConfig](cfg); d == nil || d.Device != "/dev/watchdog1" || d.Timeout != 2*time.Minute {
			t.Errorf("JSON patch: %+v", d)
		}
	})
}
