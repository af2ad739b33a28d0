package configs

import "time"

// WatchdogTimerConfig is Talos's WatchdogTimerConfig: machined opens a
// hardware watchdog device, sets its timeout and feeds it while it runs,
// so that a node whose machined hangs is reset by the hardware. It stops
// the watchdog ("magic close") when the document goes away and when the
// node shuts down or reboots. v1alpha1 has nothing for it.
type WatchdogTimerConfig struct {
	// Device is the watchdog's device node, /dev/watchdog0.
	Device string `yaml:"device"`
	// Timeout is how long the hardware waits for the next feed before it
	// resets the machine; DefaultWatchdogTimeout when zero.
	Timeout time.Duration `yaml:"timeout,omitempty"`
}

// Talos's bounds of WatchdogTimerConfig.timeout.
const (
	MinWatchdogTimeout     = 10 * time.Second
	DefaultWatchdogTimeout = time.Minute
)

// Kind implements Document.
func (*WatchdogTimerConfig) Kind() string { return "WatchdogTimerConfig" }

// EffectiveTimeout is the timeout in effect: the default when unset.
func (w *WatchdogTimerConfig) EffectiveTimeout() time.Duration {
	if w.Timeout == 0 {
		return DefaultWatchdogTimeout
	}

	return w.Timeout
}

func (w *WatchdogTimerConfig) check(v *validator, path string) {
	if w.Device == "" {
		v.errorf(path+".device", "device is required: the watchdog's device node (/dev/watchdog0)")
	}

	if w.Timeout != 0 && w.Timeout < MinWatchdogTimeout {
		v.errorf(path+".timeout", "timeout %s is too short: the minimum is %s (unset: %s)", w.Timeout, MinWatchdogTimeout, DefaultWatchdogTimeout)
	}

	if v.mode == ModeContainer {
		v.errorf(path, "a container node has no hardware watchdog to feed: talosbox honours WatchdogTimerConfig on metal only")
	}
}

// fold: nothing in v1alpha1 says it.
func (*WatchdogTimerConfig) fold(*folding) {}
