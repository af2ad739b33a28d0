package configs_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// Table helpers of the per-kind tests of KmsgLogConfig, EventSinkConfig,
// WatchdogTimerConfig, ExtensionServiceConfig and UserVolumeConfig. Each
// row's documents follow testdata/full/worker.yaml; "line +N" in a want
// is the N-th line of the documents.

// obsDecodeCase is a document that decodes, or the error it gets.
type obsDecodeCase struct {
	name, docs, want string
}

func obsDecode(t *testing.T, cases []obsDecodeCase) {
	t.Helper()

	for _, tc := range cases {
		t.Run("decode/"+tc.name, func(t *testing.T) {
			t.Parallel()

			data := withDocs(t, "worker", tc.docs)
			want := obsLines(data, tc.docs, []string{tc.want})[0]

			_, err := configs.Decode(data)

			switch {
			case want == "" && err != nil:
				t.Errorf("decode: %v", err)
			case want != "" && (err == nil || err.Error() != want):
				t.Errorf("got  %v\nwant %s", err, want)
			}
		})
	}
}

// obsCheckCase is a config validated for mode (metal when empty): the
// errors and warnings it gets, in order.
type obsCheckCase struct {
	name        string
	mode        configs.Mode
	docs        string
	want, warns []string
}

func obsCheck(t *testing.T, cases []obsCheckCase) {
	t.Helper()

	for _, tc := range cases {
		t.Run("check/"+tc.name, func(t *testing.T) {
			t.Parallel()

			mode := tc.mode
			if mode == "" {
				mode = configs.ModeMetal
			}

			data := withDocs(t, "worker", tc.docs)

			cfg, pos, err := configs.DecodeWithPositions(data)
			if err != nil {
				t.Fatal(err)
			}

			warns, err := cfg.Validate(mode, configs.WithPositions(pos))

			var got []string

			if err != nil {
				list, ok := err.(*configs.Errors) //nolint:errorlint // Validate returns *Errors itself
				if !ok {
					t.Fatalf("validate: %v", err)
				}

				for _, e := range list.List {
					got = append(got, e.Error())
				}
			}

			if want := obsLines(data, tc.docs, tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("errors\ngot  %q\nwant %q", got, want)
			}

			if want := obsLines(data, tc.docs, tc.warns); !reflect.DeepEqual(warns, want) {
				t.Errorf("warnings\ngot  %q\nwant %q", warns, want)
			}
		})
	}
}

// obsLines turns "line +N:" into the line of the config data.
func obsLines(data []byte, docs string, want []string) []string {
	if len(want) == 0 {
		return nil
	}

	offset := strings.Count(string(data[:strings.LastIndex(string(data), docs)]), "\n")
	out := make([]string, len(want))

	for i, w := range want {
		out[i] = w

		var n int
		if _, err := fmt.Sscanf(w, "line +%d:", &n); err == nil {
			out[i] = fmt.Sprintf("line %d:", n+offset) + w[strings.Index(w, ":")+1:]
		}
	}

	return out
}

// obsDecoded decodes the worker config with docs after it.
func obsDecoded(t *testing.T, docs string) *configs.Config {
	t.Helper()

	cfg, err := configs.Decode(withDocs(t, "worker", docs))
	if err != nil {
		t.Fatal(err)
	}

	return cfg
}

// obsRoundTrip checks that the documents are encoded as written (docs,
// in the keys' canonical order) and decode to the same config, and that
// redaction masks exactly the secrets given.
func obsRoundTrip(t *testing.T, docs, encoded string, secrets ...string) {
	t.Helper()

	cfg := obsDecoded(t, docs)

	out, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	if _, got, ok := strings.Cut(string(out), "\n---\n"); !ok || got != encoded {
		t.Errorf("encoded documents:\n%s\nwant:\n%s", got, encoded)
	}

	again, err := configs.Decode(out)
	if err != nil || !configs.SameWritten(cfg, again) {
		t.Errorf("round trip: %v", err)
	}

	red, err := cfg.EncodeRedacted()
	if err != nil {
		t.Fatal(err)
	}

	// The documents only: the v1alpha1 document has secrets of its own.
	want := encoded
	for _, s := range secrets {
		want = strings.ReplaceAll(want, s, `"******"`)
	}

	if _, got, _ := strings.Cut(string(red), "\n---\n"); got != want {
		t.Errorf("redacted documents:\n%s\nwant:\n%s", got, want)
	}
}

// obsPatched applies a patch (strategic merge or JSON) to the worker
// config with docs after it, and decodes the result.
func obsPatched(t *testing.T, docs, patch string) *configs.Config {
	t.Helper()

	ps, err := configpatch.Parse([]byte(patch))
	if err != nil {
		t.Fatal(err)
	}

	out, err := configpatch.Apply(withDocs(t, "worker", docs), ps...)
	if err != nil {
		t.Fatal(err)
	}

	cfg, err := configs.Decode(out)
	if err != nil {
		t.Fatalf("decode the patched config: %v\n%s", err, out)
	}

	return cfg
}

// obsChange compares the worker config with docs a and b: the one change
// it finds must be at path and as live as said.
func obsChange(t *testing.T, a, b, path string, live bool) {
	t.Helper()

	changes, err := configs.Compare(obsDecoded(t, a), obsDecoded(t, b))
	if err != nil {
		t.Fatal(err)
	}

	if len(changes) != 1 || changes[0].Path.String() != path {
		t.Fatalf("changes %v, want one at %s", changes, path)
	}

	if got, ok := configs.DocumentChangeLive(changes[0].Path[0]); !ok || got != live {
		t.Errorf("DocumentChangeLive(%s) = %v, %v: want %v", changes[0].Path[0], got, ok, live)
	}
}
