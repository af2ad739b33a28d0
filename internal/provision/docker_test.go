package provision

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewUnreachableEngine(t *testing.T) {
	host := "unix://" + filepath.Join(t.TempDir(), "no-such-docker.sock")
	d, err := New(testCtx(t, 15*time.Second), Options{Host: host})
	if err == nil {
		_ = d.Close()
		t.Fatal("New succeeded against a socket that does not exist")
	}
	if !errors.Is(err, ErrEngineUnreachable) {
		t.Fatalf("error does not wrap ErrEngineUnreachable: %v", err)
	}
	for _, want := range []string{"cannot reach the Docker Engine at " + host, "DOCKER_HOST"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
}

func TestNewHostFromEnv(t *testing.T) {
	host := "unix://" + filepath.Join(t.TempDir(), "env.sock")
	t.Setenv("DOCKER_HOST", host)
	_, err := New(testCtx(t, 15*time.Second), Options{})
	if !errors.Is(err, ErrEngineUnreachable) || !strings.Contains(err.Error(), host) {
		t.Fatalf("DOCKER_HOST was not used: %v", err)
	}
}

func TestNewPings(t *testing.T) {
	d := newDocker(t)
	if d.APIVersion() == "" || d.Host() == "" {
		t.Fatalf("host %q, API version %q", d.Host(), d.APIVersion())
	}
	t.Logf("engine at %s, API %s", d.Host(), d.APIVersion())
}
