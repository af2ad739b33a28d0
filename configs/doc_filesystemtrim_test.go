package configs_test

import (
	"testing"
	"time"

	"github.com/talosbox/talosbox/configs"
)

func TestFilesystemTrimConfig(t *testing.T) {
	t.Parallel()

	const doc = "apiVersion: v1alpha1\nkind: FilesystemTrimConfig\n"

	rtRun(t, []rtCase{
		{name: "as gen config writes it", docs: doc + "interval: 168h0m0s\n", check: func(t *testing.T, cfg *configs.Config) {
			if d := configs.DocumentOf[*configs.FilesystemTrimConfig](cfg); d == nil || d.Interval != 168*time.Hour {
				t.Errorf("FilesystemTrimConfig %+v", d)
			}
		}},
		{name: "no interval: no trim", docs: doc},
		{name: "a negative interval", docs: doc + "interval: -1h\n", errs: []string{"FilesystemTrimConfig.interval: interval cannot be negative"}},
		{name: "an unknown field", docs: doc + "period: 1h\n", decodeErr: `unknown field "period"`},
		{name: "a wrong type", docs: doc + "interval: weekly\n", decodeErr: "FilesystemTrimConfig.interval: "},
		{name: "twice", docs: doc + "interval: 1h\n---\n" + doc + "interval: 2h\n", decodeErr: "duplicate document FilesystemTrimConfig"},
	})

	t.Run("encodes to itself", func(t *testing.T) {
		t.Parallel()
		rtRoundTrip(t, doc+"interval: 168h0m0s\n")
	})

	t.Run("patches", func(t *testing.T) {
		t.Parallel()

		for _, p := range []struct{ name, patch string }{
			{"strategic merge", doc + "interval: 24h\n"},
			{"json", `[{"op": "replace", "path": "/FilesystemTrimConfig/interval", "value": "24h"}]`},
		} {
			if got := configs.TrimInterval(rtPatched(t, doc+"interval: 168h\n", p.patch), "EPHEMERAL"); got != 24*time.Hour {
				t.Errorf("%s: %s", p.name, got)
			}
		}
	})

	// The trim controller follows the config.
	t.Run("changes apply live", func(t *testing.T) {
		t.Parallel()

		old, updated := rtDecode(t, rtText(t, "", doc+"interval: 168h\n")), rtDecode(t, rtText(t, "", doc+"interval: 24h\n"))

		changes, err := configs.Compare(old, updated)
		if err != nil || len(changes) != 1 || changes[0].Path.String() != "FilesystemTrimConfig.interval" {
			t.Fatalf("changes %v, %v", changes, err)
		}

		if live, ok := configs.DocumentChangeLive(changes[0].Path[0]); !ok || !live {
			t.Errorf("DocumentChangeLive = %t, %t", live, ok)
		}
	})
}
