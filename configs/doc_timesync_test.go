package configs_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

const timeSyncConfigDoc = `apiVersion: v1alpha1
kind: TimeSyncConfig
enabled: true
bootTimeout: 1m0s
ntp:
  servers:
    - time.cloudflare.com
    - 10.0.0.123
`

func TestTimeSyncConfig(t *testing.T) {
	t.Parallel()

	runNetDocCases(t, []netDocCase{
		{
			name: "folds into machine.time",
			docs: timeSyncConfigDoc,
			effective: func(t *testing.T, cfg *configs.Config) {
				want := &configs.TimeConfig{Servers: []string{"time.cloudflare.com", "10.0.0.123"}, BootTimeout: time.Minute}
				if !reflect.DeepEqual(cfg.Machine.Time, want) {
					t.Errorf("machine.time = %+v, want %+v", cfg.Machine.Time, want)
				}
			},
		},
		{
			name: "disabled",
			docs: "apiVersion: v1alpha1\nkind: TimeSyncConfig\nenabled: false\n",
			effective: func(t *testing.T, cfg *configs.Config) {
				if !cfg.Machine.Time.Disabled {
					t.Errorf("machine.time = %+v", cfg.Machine.Time)
				}
			},
		},
		{
			name:      "unknown field",
			docs:      "apiVersion: v1alpha1\nkind: TimeSyncConfig\nservers: [pool.ntp.org]\n",
			decodeErr: `unknown field "servers" in TimeSyncConfig`,
		},
		{
			name:      "wrong type",
			docs:      "apiVersion: v1alpha1\nkind: TimeSyncConfig\nbootTimeout: soon\n",
			decodeErr: `TimeSyncConfig.bootTimeout:`,
		},
		{
			name: "Talos's rules, and NTS and PTP",
			docs: "apiVersion: v1alpha1\nkind: TimeSyncConfig\nbootTimeout: -1s\nntp:\n  servers: [10.0.0.123, nts.example.org]\n  useNTS: true\nptp:\n  devices: [/dev/ptp0]\n",
			errs: []string{
				`TimeSyncConfig.bootTimeout: must not be negative`,
				`TimeSyncConfig: only one of ntp or ptp configuration can be specified`,
				`TimeSyncConfig.ptp: talosbox does not implement PTP time sync yet: it syncs the clock over NTP; use ntp.servers`,
				`TimeSyncConfig.ntp.servers[0]: NTS requires hostnames, not IP addresses: "10.0.0.123"`,
				`TimeSyncConfig.ntp.useNTS: talosbox does not implement NTS (authenticated NTP) yet: remove useNTS, or set it to false`,
			},
		},
		{
			name: "useNTS: false is plain NTP",
			docs: "apiVersion: v1alpha1\nkind: TimeSyncConfig\nntp:\n  servers: [10.0.0.123]\n  useNTS: false\n",
		},
		{
			name: "machine.time names servers",
			v1:   `machine: {time: {servers: [pool.ntp.org]}}`,
			docs: "apiVersion: v1alpha1\nkind: TimeSyncConfig\nbootTimeout: 30s\n",
			errs: []string{`TimeSyncConfig: time servers cannot be specified in both v1alpha1 and new-style configuration (machine.time.servers is set): configure time sync in one place`},
		},
		{
			name: "machine.time disables it",
			v1:   `machine: {time: {disabled: true}}`,
			docs: "apiVersion: v1alpha1\nkind: TimeSyncConfig\nenabled: true\n",
			errs: []string{`TimeSyncConfig: time sync cannot be disabled in both v1alpha1 and new-style configuration (machine.time.disabled is set): configure time sync in one place`},
		},
		{
			name: "machine.time sets a boot timeout",
			v1:   `machine: {time: {bootTimeout: 2m}}`,
			docs: timeSyncConfigDoc,
			errs: []string{`TimeSyncConfig: boot timeout cannot be specified in both v1alpha1 and new-style configuration (machine.time.bootTimeout is set): configure time sync in one place`},
		},
	})
}

func TestTimeSyncConfigRoundTripAndPatches(t *testing.T) {
	t.Parallel()

	checkNetDocRoundTrip(t, timeSyncConfigDoc)

	checkNetDocPatch(t, timeSyncConfigDoc, "apiVersion: v1alpha1\nkind: TimeSyncConfig\nbootTimeout: 2m\n",
		func(t *testing.T, cfg *configs.Config) {
			if cfg.Machine.Time.BootTimeout != 2*time.Minute {
				t.Errorf("after the strategic merge patch: %+v", cfg.Machine.Time)
			}
		})

	checkNetDocPatch(t, timeSyncConfigDoc, `[{"op": "replace", "path": "/TimeSyncConfig/ntp/servers", "value": ["pool.ntp.org"]}]`,
		func(t *testing.T, cfg *configs.Config) {
			if s := cfg.Machine.Time.Servers; !reflect.DeepEqual(s, []string{"pool.ntp.org"}) {
				t.Errorf("after the JSON patch: %v", s)
			}
		})
}
