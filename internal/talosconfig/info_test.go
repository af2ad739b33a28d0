package talosconfig

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

func TestWriteContexts(t *testing.T) {
	c := threeContexts()
	c.Contexts["a"].Nodes = []string{"n1", "n2", "n3", "n4"}
	c.Contexts["a"].Endpoints = []string{"e1", "e2"}

	var buf bytes.Buffer
	if err := c.WriteContexts(&buf); err != nil {
		t.Fatal(err)
	}

	want := "CURRENT   NAME    ENDPOINTS   NODES\n" +
		"          a       e1,e2       n1,n2,n3...\n" +
		"*         b       10.0.1.1    10.0.1.2\n" +
		"          b-dev   10.0.2.1    \n"
	if buf.String() != want {
		t.Errorf("table:\n%q\nwant:\n%q", buf.String(), want)
	}
}

func TestInfo(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

	b, err := pki.NewBundle(pki.BundleOptions{})
	if err != nil {
		t.Fatal(err)
	}

	client, err := pki.NewClientCertificate(&b.Certs.OS, pki.ClientOptions{
		Roles: []string{"os:reader", "os:operator"}, TTL: 30 * 24 * time.Hour, Now: func() time.Time { return now },
	})
	if err != nil {
		t.Fatal(err)
	}

	c := New("lab", []string{"10.5.0.2"}, b.Certs.OS.Crt, client)
	c.Contexts["lab"].Nodes = []string{"10.5.0.2", "10.5.0.3"}
	c.Contexts["nocert"] = &Context{}
	c.Contexts["badcert"] = &Context{Crt: base64.StdEncoding.EncodeToString([]byte("junk"))}

	info, err := c.Info("", now)
	if err != nil {
		t.Fatal(err)
	}

	want := "Current context:     lab\n" +
		"Nodes:               10.5.0.2, 10.5.0.3\n" +
		"Endpoints:           10.5.0.2\n" +
		"Roles:               os:operator, os:reader\n" +
		"Certificate expires: 30 days from now (2026-05-31)\n"
	if info.String() != want {
		t.Errorf("info:\n%s\nwant:\n%s", info, want)
	}

	bare, err := c.Info("nocert", now)
	if err != nil {
		t.Fatal(err)
	}

	if got := bare.String(); got != "Current context:     nocert\nNodes:               not defined\nEndpoints:           not defined\n" {
		t.Errorf("info without cert:\n%s", got)
	}

	if _, err := c.Info("badcert", now); err == nil || !strings.Contains(err.Error(), `context "badcert": crt: parse certificate: no PEM block`) {
		t.Errorf("bad cert error = %v", err)
	}

	if _, err := c.Info("missing", now); err == nil || err.Error() != `context "missing" is not defined` {
		t.Errorf("missing context error = %v", err)
	}
}

func TestRelativeTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

	tests := []struct {
		d    time.Duration
		want string
	}{
		{365 * 24 * time.Hour, "365 days from now"},
		{-72 * time.Hour, "3 days ago"},
		{47 * time.Hour, "47 hours from now"},
		{90 * time.Minute, "90 minutes from now"},
		{-time.Minute, "1 minute ago"},
		{10 * time.Second, "now"},
	}

	for _, tt := range tests {
		if got := relativeTime(now.Add(tt.d), now); got != tt.want {
			t.Errorf("relativeTime(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
