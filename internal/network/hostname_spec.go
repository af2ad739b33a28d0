package network

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/talosbox/talosbox/internal/bus"
	"github.com/talosbox/talosbox/internal/resources/network"
)

// HostnameSetter applies a hostname. It is pluggable because only a
// machine owns the kernel's hostname: a container-mode node or a test
// writes it into its own files instead.
type HostnameSetter interface {
	SetHostname(hostname, domainname string) error
}

// KernelHostname sets the UTS namespace's host and domain names
// (sethostname(2), setdomainname(2)): metal only.
type KernelHostname struct{}

// SetHostname implements HostnameSetter.
func (KernelHostname) SetHostname(hostname, domainname string) error {
	if err := unix.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("sethostname %q: %w", hostname, err)
	}

	if err := unix.Setdomainname([]byte(domainname)); err != nil {
		return fmt.Errorf("setdomainname %q: %w", domainname, err)
	}

	return nil
}

// FileHostname writes the hostname into a file (the node's own
// etc/hostname), atomically.
type FileHostname struct{ Path string }

// SetHostname implements HostnameSetter.
func (f FileHostname) SetHostname(hostname, _ string) error {
	return writeFileAtomic(f.Path, []byte(hostname+"\n"))
}

// writeFileAtomic replaces path so readers see the old or the new file,
// never half of one.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}

	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name()) //nolint:errcheck // gone after the rename

	if _, err := tmp.Write(data); err != nil {
		tmp.Close() //nolint:errcheck

		return fmt.Errorf("write %s: %w", path, err)
	}

	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close() //nolint:errcheck

		return fmt.Errorf("write %s: %w", path, err)
	}

	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}

	return nil
}

// HostnameSpecController applies the merged HostnameSpec through the
// setter and publishes HostnameStatus once it is in effect.
type HostnameSpecController struct {
	opts    *Options
	applied network.HostnameStatusSpec
}

// NewHostnameSpecController makes the controller.
func NewHostnameSpecController(opts *Options) *HostnameSpecController {
	return &HostnameSpecController{opts: opts}
}

func (c *HostnameSpecController) Name() string { return "network.HostnameSpecController" }

func (c *HostnameSpecController) Inputs() []bus.Input {
	return []bus.Input{{Namespace: network.Namespace, Type: network.HostnameSpecType, ID: network.HostnameID}}
}

func (c *HostnameSpecController) Outputs() []bus.Output {
	return []bus.Output{{Type: network.HostnameStatusType}, issueOutput}
}

func (c *HostnameSpecController) Run(ctx context.Context, r bus.ControllerRuntime) error {
	return loop(ctx, r, nil, func() error {
		spec, err := bus.GetAs[*network.HostnameSpec](ctx, r, bus.Pointer{Namespace: network.Namespace, Type: network.HostnameSpecType, ID: network.HostnameID})
		if bus.IsNotFound(err) {
			return nil
		}

		if err != nil {
			return err
		}

		want := network.HostnameStatusSpec{Hostname: spec.TypedSpec().Hostname, Domainname: spec.TypedSpec().Domainname}
		is := issues{}

		if want != c.applied && c.opts.Hostname != nil {
			if err := c.opts.Hostname.SetHostname(want.Hostname, want.Domainname); err != nil {
				is.fail("hostname/"+network.HostnameID, err)
				return is.sync(ctx, r, c.Name())
			}
		}

		c.applied = want

		if err := syncOutputs(ctx, r, c.Name(), network.Namespace, network.HostnameStatusType, map[string]network.HostnameStatusSpec{network.HostnameID: want}); err != nil {
			return err
		}

		return is.sync(ctx, r, c.Name())
	})
}
