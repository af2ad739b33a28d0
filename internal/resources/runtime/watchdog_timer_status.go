package runtime

import (
	"time"

	"github.com/talosbox/talosbox/internal/bus"
)

// WatchdogTimerStatusType is Talos's type of the watchdog machined feeds
// (a WatchdogTimerConfig), ID WatchdogTimerStatusID.
const (
	WatchdogTimerStatusType = "WatchdogTimerStatuses.runtime.talos.dev"
	WatchdogTimerStatusID   = "timer"
)

// WatchdogTimerStatusSpec is the device, the timeout its driver set and
// how often it is fed.
type WatchdogTimerStatusSpec struct {
	Device       string        `yaml:"device"`
	Timeout      time.Duration `yaml:"timeout"`
	FeedInterval time.Duration `yaml:"feedInterval"`
}

// WatchdogTimerStatus is a WatchdogTimerStatuses resource.
type WatchdogTimerStatus = bus.Typed[WatchdogTimerStatusSpec]
