// Package kubevalidate runs a Kubernetes release's own validation of the
// component configuration a machine config feeds: the kubelet's
// ValidateKubeletConfiguration (after its own decoding and defaulting),
// kube-scheduler's ValidateKubeSchedulerConfiguration and framework
// construction, kube-controller-manager's option validation. That code is
// per version and large (measured: 54.6 MB for the kubelet's and the
// scheduler's validation packages alone, 12.4 MB compressed), so it is not
// linked into talosbox: it runs in the Kubernetes binary make images
// builds for that version (images/kubernetes, mode kube-config-validate),
// found in the image cache. Where there is none, Find says so and the
// caller relies on the checks configs makes itself from the per-version
// data (configs/kubeschema).
//
// Like configs/kubeschema, this package imports only the standard library.
package kubevalidate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Request is what the validator reads. Each part is optional.
type Request struct {
	Kubelet           *Kubelet           `json:"kubelet,omitempty"`
	Scheduler         *Scheduler         `json:"scheduler,omitempty"`
	ControllerManager *ControllerManager `json:"controllerManager,omitempty"`
}

// Kubelet is the KubeletConfiguration the node writes, and the top-level
// fields of it the machine config set (problems are attributed to them).
type Kubelet struct {
	Config map[string]any `json:"config"`
	Fields []string       `json:"fields"`
}

// Scheduler is the KubeSchedulerConfiguration the node writes, and the
// scheduler's --feature-gates.
type Scheduler struct {
	Config       map[string]any `json:"config"`
	FeatureGates string         `json:"featureGates,omitempty"`
}

// ControllerManager is kube-controller-manager's command line without the
// program name (--flag=value).
type ControllerManager struct {
	Args []string `json:"args"`
}

// Problem is one thing a component refuses, in its words. Field is a
// top-level field of the kubelet's config, a field path of the scheduler's
// (profiles[0].plugins), a flag name of the controller-manager's, or ""
// when the component does not say.
type Problem struct {
	Field string `json:"field,omitempty"`
	Msg   string `json:"msg"`
}

// Answer is what the validator of a version says.
type Answer struct {
	Version           string    `json:"version"`
	Kubelet           []Problem `json:"kubelet,omitempty"`
	Scheduler         []Problem `json:"scheduler,omitempty"`
	ControllerManager []Problem `json:"controllerManager,omitempty"`
}

// Timeout bounds one run: the binary starts in well under a second.
const Timeout = 30 * time.Second

// ErrNotFound: no Kubernetes binary of that version here.
var ErrNotFound = errors.New("no Kubernetes binary of that version here")

// Find returns the Kubernetes binary of version ("1.34.12") that make
// images built: in $TALOSBOX_IMAGE_CACHE (or the default image cache,
// $XDG_CACHE_HOME/talosbox/images) under build/kubernetes-v<version>-*/,
// the newest when several builds are kept.
func Find(version string) (string, error) {
	cache := os.Getenv("TALOSBOX_IMAGE_CACHE")
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", ErrNotFound
		}

		cache = filepath.Join(dir, "talosbox", "images")
	}

	matches, _ := filepath.Glob(filepath.Join(cache, "build", "kubernetes-v"+strings.TrimPrefix(version, "v")+"-*", "kubernetes")) //nolint:errcheck // only a bad pattern fails

	var (
		best   string
		newest time.Time
	)

	for _, m := range matches {
		st, err := os.Stat(m)
		if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
			continue
		}

		if best == "" || st.ModTime().After(newest) {
			best, newest = m, st.ModTime()
		}
	}

	if best == "" {
		return "", fmt.Errorf("%w (looked in %s)", ErrNotFound, filepath.Join(cache, "build"))
	}

	return best, nil
}

// Run runs the validator in bin (the Kubernetes binary, which answers as
// kube-config-validate by its argv[0]) on req.
func Run(ctx context.Context, bin string, req *Request) (*Answer, error) {
	in, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("kube-config-validate: %w", err)
	}

	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()

	var stdout, stderr bytes.Buffer

	cmd := exec.CommandContext(ctx, bin)
	cmd.Args[0] = "kube-config-validate"
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The components read their environment (KUBECONFIG, proxies); the
	// validation must not depend on the caller's.
	cmd.Env = []string{}
	cmd.Dir = os.TempDir()

	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("kube-config-validate (%s): %w: %s", bin, err, strings.TrimSpace(tail(stderr.String(), 2000)))
	}

	var ans Answer
	if err := json.Unmarshal(stdout.Bytes(), &ans); err != nil {
		return nil, fmt.Errorf("kube-config-validate (%s): its answer: %w", bin, err)
	}

	if ans.Version == "" {
		return nil, fmt.Errorf("kube-config-validate (%s): its answer names no version: is it a Kubernetes binary with kube-config-validate (make images)?", bin)
	}

	return &ans, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}

	return s[len(s)-n:]
}
