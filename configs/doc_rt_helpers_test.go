package configs_test

// Helpers for the tests of the runtime, block, cluster and security
// documents (doc_<kind>_test.go): a worker config without the v1alpha1
// sections those documents stand for, loaded with documents after it.

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
	"github.com/talosbox/talosbox/internal/configpatch"
)

// rtBase is testdata/full/worker.yaml without machine.install,
// cluster.id, cluster.secret and cluster.discovery.
func rtBase(t *testing.T) string {
	t.Helper()

	data, err := os.ReadFile("testdata/full/worker.yaml")
	if err != nil {
		t.Fatal(err)
	}

	return string(rtApply(t, data, `[{"op": "remove", "path": "/machine/install"}, {"op": "remove", "path": "/cluster/id"},
		{"op": "remove", "path": "/cluster/secret"}, {"op": "remove", "path": "/cluster/discovery"}]`))
}

// rtApply applies a patch (JSON or strategic merge) with configpatch.
func rtApply(t *testing.T, data []byte, patch string) []byte {
	t.Helper()

	patches, err := configpatch.Parse([]byte(patch))
	if err != nil {
		t.Fatalf("patch: %v\n%s", err, patch)
	}

	out, err := configpatch.Apply(data, patches...)
	if err != nil {
		t.Fatalf("apply: %v\n%s", err, patch)
	}

	return out
}

// rtText is the base, patched with v1 (a strategic merge patch, when
// given), followed by docs.
func rtText(t *testing.T, v1, docs string) string {
	t.Helper()

	base := rtBase(t)
	if v1 != "" {
		base = string(rtApply(t, []byte(base), v1))
	}

	if docs == "" {
		return base
	}

	return strings.TrimRight(base, "\n") + "\n---\n" + docs
}

// rtCase is the base config with documents, and what loading it finds.
type rtCase struct {
	name string
	// mode is ModeContainer when empty.
	mode configs.Mode
	// v1 is a strategic merge patch to the v1alpha1 document.
	v1 string
	// docs are YAML documents, separated by ---.
	docs string
	// decodeErr is what decoding refuses, if anything.
	decodeErr string
	// errs and warns are the problems validation reports, one substring
	// for each (and no other).
	errs, warns []string
	// check reads the effective config of a valid one.
	check func(t *testing.T, cfg *configs.Config)
}

func rtRun(t *testing.T, cases []rtCase) {
	t.Helper()

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			cfg, warns, err := configs.Load([]byte(rtText(t, tc.v1, tc.docs)), cmp.Or(tc.mode, configs.ModeContainer))

			if tc.decodeErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.decodeErr) {
					t.Fatalf("err = %v, want a decode error saying %q", err, tc.decodeErr)
				}

				return
			}

			var problems []string

			var list *configs.Errors
			if errors.As(err, &list) {
				for _, e := range list.List {
					problems = append(problems, e.Error())
				}
			} else if err != nil {
				problems = []string{err.Error()}
			}

			rtMatch(t, "error", problems, tc.errs)
			rtMatch(t, "warning", warns, tc.warns)

			if tc.check != nil && err == nil {
				tc.check(t, cfg)
			}
		})
	}
}

// rtMatch checks that got and want pair up: each want a substring of a
// different got.
func rtMatch(t *testing.T, what string, got, want []string) {
	t.Helper()

	left := slices.Clone(got)

	for _, w := range want {
		i := slices.IndexFunc(left, func(g string) bool { return strings.Contains(g, w) })
		if i < 0 {
			t.Errorf("no %s says %q; got %q", what, w, got)

			continue
		}

		left = slices.Delete(left, i, i+1)
	}

	if len(left) > 0 {
		t.Errorf("unexpected %ss: %q", what, left)
	}
}

// rtDecode decodes text, which must decode.
func rtDecode(t *testing.T, text string) *configs.Config {
	t.Helper()

	cfg, err := configs.Decode([]byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}

	return cfg
}

// rtRoundTrip: the base with docs encodes to what decodes to the same
// config, written the same way, and meaning the same.
func rtRoundTrip(t *testing.T, docs string) {
	t.Helper()

	cfg := rtDecode(t, rtText(t, "", docs))

	out, err := cfg.Encode()
	if err != nil {
		t.Fatal(err)
	}

	again := rtDecode(t, string(out))

	if !configs.SameWritten(cfg, again) {
		t.Errorf("the encoding is written differently:\n%s", out)
	}

	if changes, err := configs.Compare(cfg, again); err != nil || len(changes) > 0 {
		t.Errorf("the encoding means something else: %v %v", changes, err)
	}
}

// rtPatched is the base with docs, patched, decoded.
func rtPatched(t *testing.T, docs, patch string) *configs.Config {
	t.Helper()

	return rtDecode(t, string(rtApply(t, []byte(rtText(t, "", docs)), patch)))
}
