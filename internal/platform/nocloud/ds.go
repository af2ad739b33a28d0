package nocloud

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/talosbox/talosbox/internal/platform"
)

// DS is a seed named by a "ds=" string instead of a volume: the machine's
// SMBIOS system serial number (QEMU's -smbios type=1,serial=...,
// Proxmox's smbios1 serial) holding "ds=nocloud-net;s=http://10.0.0.1/configs/;h=HOSTNAME",
// as Talos and cloud-init read it. Its files are fetched from SeedFrom
// once the network is up (by DHCP).
type DS struct {
	// SeedFrom is the URL the files are under, ending in a slash.
	SeedFrom string
	// Hostname (h= or local-hostname=) and InstanceID (i= or
	// instance-id=), when given.
	Hostname, InstanceID string
}

// ParseDS reads a "ds=nocloud[-net];key=val;..." string; ok is false when
// s names no NoCloud seed (an ordinary serial number). A seed without s=
// (seedfrom=) or with a URL that is not http(s) is an error: it names
// this platform but could not be read.
func ParseDS(s string) (ds DS, ok bool, err error) {
	s = strings.TrimSpace(s)

	fields := strings.Split(s, ";")
	if kind, found := strings.CutPrefix(fields[0], "ds="); !found || (kind != "nocloud" && kind != "nocloud-net") {
		return DS{}, false, nil
	}

	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")

		switch k {
		case "s", "seedfrom":
			ds.SeedFrom = v
		case "h", "local-hostname":
			ds.Hostname = v
		case "i", "instance-id":
			ds.InstanceID = v
		}
	}

	u, err := url.Parse(ds.SeedFrom)

	switch {
	case ds.SeedFrom == "":
		return DS{}, true, fmt.Errorf("nocloud: %q names no seed URL (s=)", s)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return DS{}, true, fmt.Errorf("nocloud: %q: the seed URL must be http(s)://HOST/PATH/", s)
	}

	if !strings.HasSuffix(ds.SeedFrom, "/") {
		ds.SeedFrom += "/"
	}

	return ds, true, nil
}

// Fetch reads one of the seed's files (user-data, meta-data,
// network-config); a file the server does not have (404) is nil. Network
// trouble and server errors are retried with backoff until ctx ends: the
// network may come up after the first try.
func (ds DS) Fetch(ctx context.Context, name string) ([]byte, error) {
	backoff := 250 * time.Millisecond

	for {
		data, retry, err := ds.fetchOnce(ctx, name)
		if err == nil || !retry {
			return data, err
		}

		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}

		backoff = min(2*backoff, 5*time.Second)
	}
}

func (ds DS) fetchOnce(ctx context.Context, name string) (data []byte, retry bool, err error) {
	data, retry, err = platform.FetchOnce(ctx, ds.SeedFrom+name)
	if errors.Is(err, platform.ErrNotFound) {
		return nil, false, nil
	}

	if err != nil {
		return nil, retry, fmt.Errorf("nocloud: %w", err)
	}

	return data, false, nil
}
