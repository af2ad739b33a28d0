package k8s

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A drain goes on through the errors an API server under load or
// restarting gives, and stops at the ones sending again cannot fix.
func TestDrainRetryable(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}

	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		// client-go's words when the response body broke off mid-read.
		{"body cut short", fmt.Errorf("unexpected error when reading response body. Please retry. Original error: %w", io.ErrUnexpectedEOF), true},
		{"connection refused", &net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, true},
		{"connection reset", &net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		{"too many requests", apierrors.NewTooManyRequests("budget", 1), true},
		{"service unavailable", apierrors.NewServiceUnavailable("starting"), true},
		{"forbidden", apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(gr, "p"), false},
		{"invalid", errors.New("admission webhook denied the request"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := retryable(tc.err); got != tc.want {
				t.Fatalf("retryable(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
