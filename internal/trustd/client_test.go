package trustd

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/talosbox/talosbox/internal/pki"
)

// signRequest is a valid request to endpoints.
func signRequest(t *testing.T, endpoints ...string) SignRequest {
	t.Helper()

	ca, _, _ := cas(t)

	return SignRequest{
		Endpoints: endpoints,
		Token:     testToken,
		Trust:     trustPool(t, ca),
		CSR:       newCSR(t, pki.CSROptions{CommonName: "worker", IPs: []net.IP{net.IPv4(10, 5, 0, 3)}}),
	}
}

// A control-plane node that is down is skipped for the next one.
func TestSignFailsOver(t *testing.T) {
	ts := startServer(t, nil)
	down := closedAddr(t)

	var failed []string

	req := signRequest(t, down, ts.addr)
	req.OnError = func(ep string, err error) {
		failed = append(failed, ep)

		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s: %v, want Unavailable", ep, err)
		}
	}

	if _, _, err := Sign(testContext(t), req); err != nil {
		t.Fatal(err)
	}

	if len(failed) != 1 || failed[0] != down {
		t.Errorf("failed attempts = %v, want one on %s", failed, down)
	}
}

// A worker that boots before the control plane gets its certificate once
// trustd is up.
func TestSignWaitsForServer(t *testing.T) {
	addr := closedAddr(t)
	firstFailure := make(chan struct{})
	attempts := 0

	req := signRequest(t, addr)
	req.OnError = func(string, error) {
		if attempts++; attempts == 1 {
			close(firstFailure)
		}
	}

	type result struct {
		crt []byte
		err error
	}

	done := make(chan result, 1)

	go func() {
		_, crt, err := Sign(testContext(t), req)
		done <- result{crt, err}
	}()

	select {
	case <-firstFailure:
	case r := <-done:
		t.Fatalf("Sign returned before any failure: %v", r.err)
	}

	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", addr, err)
	}

	startServer(t, lis)

	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}

	if _, err := pki.ParseCertificatePEM(r.crt); err != nil {
		t.Fatal(err)
	}
}

// The caller's deadline ends the retries, and the error says what was tried.
func TestSignGivesUpAtDeadline(t *testing.T) {
	a, b := closedAddr(t), closedAddr(t)

	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()

	attempts := 0
	req := signRequest(t, a, b)
	req.OnError = func(string, error) { attempts++ }

	_, _, err := Sign(ctx, req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want the deadline", err)
	}

	if msg := err.Error(); !strings.Contains(msg, a) || !strings.Contains(msg, b) {
		t.Errorf("the error does not name both endpoints: %v", err)
	}

	if status.Code(err) == codes.Unknown {
		t.Errorf("the last attempt's error is lost: %v", err)
	}

	if attempts < 4 {
		t.Errorf("attempts = %d, want at least two rounds", attempts)
	}
}

// A worker verifies trustd before sending it the token: a server that its
// CAs do not vouch for, or that is not the host it dialled, is refused.
func TestSignRefusesUntrustedServer(t *testing.T) {
	ts := startServer(t, nil)
	_, other, _ := cas(t)
	_, port, _ := net.SplitHostPort(ts.addr)

	for _, tc := range []struct {
		name     string
		endpoint string
		trust    *pki.CertAndKey
		want     string
	}{
		{"other cluster's CA", ts.addr, other, "certificate signed by unknown authority"},
		// The serving certificate names 127.0.0.1 only.
		{"wrong host name", net.JoinHostPort("localhost", port), nil, "wanted to match localhost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testContext(t))
			defer cancel()

			req := signRequest(t, tc.endpoint)
			if tc.trust != nil {
				req.Trust = trustPool(t, tc.trust)
			}

			req.OnError = func(string, error) { cancel() }

			_, _, err := Sign(ctx, req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}

	if strings.Contains(ts.log.String(), "issued") {
		t.Errorf("a certificate was issued:\n%s", ts.log)
	}
}

func TestSignRefusesIncompleteRequests(t *testing.T) {
	good := signRequest(t, "127.0.0.1")

	for _, tc := range []struct {
		name string
		edit func(*SignRequest)
		want string
	}{
		{"no endpoints", func(r *SignRequest) { r.Endpoints = nil }, "no control-plane endpoints"},
		{"bad endpoint", func(r *SignRequest) { r.Endpoints = []string{"10.0.0.1:http"} }, "invalid port"},
		{"no token", func(r *SignRequest) { r.Token = "" }, "no machine token"},
		{"no trust", func(r *SignRequest) { r.Trust = nil }, "no trusted CAs"},
		{"no CSR", func(r *SignRequest) { r.CSR = nil }, "no CSR"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := good
			tc.edit(&req)

			if _, _, err := Sign(testContext(t), req); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}

	if _, err := IssueServerCertificate(testContext(t), good, ServerOptions{CommonName: "w"}); err == nil {
		t.Error("a server certificate without names was asked for")
	}
}

func TestEndpointAddr(t *testing.T) {
	for in, want := range map[string]string{
		"10.5.0.2":          "10.5.0.2:50001",
		"10.5.0.2:6000":     "10.5.0.2:6000",
		"cp-1.example.org":  "cp-1.example.org:50001",
		" cp-1:50001 ":      "cp-1:50001",
		"fd00::2":           "[fd00::2]:50001",
		"[fd00::2]":         "[fd00::2]:50001",
		"[fd00::2]:6000":    "[fd00::2]:6000",
		"":                  "",
		":50001":            "",
		"10.5.0.2:0":        "",
		"10.5.0.2:70000":    "",
		"cp-1:not-a-number": "",
		"https://cp-1:6443": "",
		"cp-1/api":          "",
		"fe80::1%eth0":      "[fe80::1%eth0]:50001",
	} {
		got, err := endpointAddr(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("endpointAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}

	got, err := endpointAddrs([]string{"10.5.0.2", "10.5.0.2:50001", "10.5.0.3"})
	if err != nil || strings.Join(got, ",") != "10.5.0.2:50001,10.5.0.3:50001" {
		t.Errorf("endpointAddrs = %v, %v; want duplicates dropped", got, err)
	}
}
