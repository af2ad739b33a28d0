package watchdog_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/config"
	"github.com/talosbox/talosbox/internal/watchdog"
)

// A real watchdog is driven in a QEMU guest (boot/metaltest, softdog):
// this machine's kernel has none. Here: what is not a watchdog is
// refused, and the feed interval is Talos's.

func TestOpenRefuses(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct{ path, want string }{
		{"/dev/null", "watchdog: /dev/null is not a watchdog device: inappropriate ioctl for device"},
		{"/dev/watchdog-none", "watchdog: open /dev/watchdog-none: no such file or directory"},
	} {
		if _, err := watchdog.Open(tc.path); err == nil || err.Error() != tc.want {
			t.Errorf("Open(%s): %v, want %s", tc.path, err, tc.want)
		}
	}
}

func TestFeedInterval(t *testing.T) {
	t.Parallel()

	for timeout, want := range map[time.Duration]time.Duration{time.Minute: 20 * time.Second, 10 * time.Second: 10 * time.Second / 3} {
		if got := watchdog.FeedInterval(timeout); got != want {
			t.Errorf("FeedInterval(%s) = %s, want %s", timeout, got, want)
		}
	}
}

// TestControllerFails: a config naming a device that is no watchdog
// fails the controller, which says why.
func TestControllerFails(t *testing.T) {
	t.Parallel()

	failed := make(chan string, 16)
	store := bus.NewStore(bus.StoreOptions{})
	rt := bus.NewRuntime(store, bus.RuntimeOptions{Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) {
		select {
		case failed <- string(p):
		default:
		}
	}), nil))})

	if err := rt.Register(&watchdog.Controller{}); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})

	go func() {
		defer close(done)
		rt.Run(ctx) //nolint:errcheck // ends with the test
	}()

	t.Cleanup(func() { cancel(); <-done })

	cfg := configs.NewConfig(nil, &configs.WatchdogTimerConfig{Device: "/dev/null"})
	if err := store.Create(ctx, bus.NewTyped(config.NamespaceConfig, config.MachineConfigType, config.ActiveConfigID, config.MachineConfigSpec{Config: cfg}),
		bus.WithOwner("machined")); err != nil {
		t.Fatal(err)
	}

	deadline := time.After(30 * time.Second)

	for {
		select {
		case line := <-failed:
			if strings.Contains(line, "/dev/null is not a watchdog device") {
				return
			}
		case <-deadline:
			t.Fatal("the controller did not report the device it refused")
		}
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }
