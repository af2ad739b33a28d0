package check_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/cluster/check"
)

// reasons is a check that fails with each reason in turn, then passes.
func reasons(rs ...string) func(context.Context, *check.Cluster) error {
	i := 0

	return func(context.Context, *check.Cluster) error {
		if i == len(rs) {
			return nil
		}

		i++

		if rs[i-1] == "" {
			return nil
		}

		return errors.New(rs[i-1])
	}
}

func TestWait(t *testing.T) {
	for _, tc := range []struct {
		name    string
		run     func(context.Context, *check.Cluster) error
		want    string
		wantErr string
	}{
		{"met at once", reasons(), "waiting for x: OK\n", ""},
		{"a reason is printed when it changes", reasons("a", "a", "b"), "waiting for x: a\nwaiting for x: b\nwaiting for x: OK\n", ""},
		{"skipped says why", func(context.Context, *check.Cluster) error { return check.Skip("no shared IP") }, "waiting for x: skipped (no shared IP)\n", ""},
		{"a wrapped skip", func(context.Context, *check.Cluster) error { return fmt.Errorf("kube-proxy: %w", check.ErrSkipped) }, "waiting for x: skipped (kube-proxy: not deployed)\n", ""},
		{"timed out with the last reason", func(context.Context, *check.Cluster) error { return errors.New("etcd is stopped") }, "waiting for x: etcd is stopped\n", "waiting for x: timed out: etcd is stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()

			var out bytes.Buffer

			err := check.Wait(ctx, &out, &check.Cluster{}, check.Check{Name: "x", Run: tc.run})

			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("error: %v", err)
			case tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr):
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}

			if out.String() != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), tc.want)
			}
		})
	}
}

func TestQuoteNodes(t *testing.T) {
	if got := check.QuoteNodes([]string{"10.5.0.2", "node-a"}); got != `"10.5.0.2" "node-a"` {
		t.Errorf("got %s", got)
	}

	if got := check.QuoteNodes(nil); got != "" {
		t.Errorf("no nodes: %q", got)
	}

	if !strings.Contains(check.ServiceHealth(nil), "?") {
		t.Error("unknown health is not ?")
	}
}
