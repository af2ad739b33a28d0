package vm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/talosbox/talosbox/boot/qemu"
)

// CachePort is where the host serves the image cache on a segment's
// gateway. Each cluster's gateway is its own address, so clusters do not
// collide on it.
const CachePort = 50080

// CacheMirror is the registry mirror URL of the image cache that the host
// serves a cluster on cidr: nodes pull Kubernetes from it, as Docker nodes
// pull from the copy in their image (no registry is ever contacted).
func CacheMirror(cidr netip.Prefix) string {
	return "http://" + net.JoinHostPort(Gateway(cidr).String(), strconv.Itoa(CachePort))
}

// cacheStartTimeout bounds how long the cache server has to listen.
const cacheStartTimeout = 15 * time.Second

// startCache runs argv (a cache server that takes --address) detached on
// the gateway, logging to cache.log, and waits until it accepts
// connections: a node's first pull must not race it.
func (st *State) startCache(argv []string) error {
	addr := net.JoinHostPort(st.Gateway.String(), strconv.Itoa(CachePort))

	log, err := os.OpenFile(filepath.Join(st.dir, "cache.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()

	cmd := exec.Command(argv[0], append(argv[1:], "--address", addr)...) //nolint:gosec // the CLI's own binary
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}

	if err := cmd.Start(); err != nil {
		return fmt.Errorf("image cache: %w", err)
	}

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // reaped while this process lives

	st.CachePID, st.CacheComm = cmd.Process.Pid, commOf(argv[0])

	ctx, cancel := context.WithTimeout(context.Background(), cacheStartTimeout)
	defer cancel()

	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()

	for {
		c, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}

		select {
		case err := <-exited:
			return fmt.Errorf("image cache on %s exited (%v): see %s", addr, err, filepath.Join(st.dir, "cache.log"))
		case <-ctx.Done():
			return fmt.Errorf("image cache on %s: not listening within %s: see %s", addr, cacheStartTimeout, filepath.Join(st.dir, "cache.log"))
		case <-tick.C:
		}
	}
}

// stopCache stops the cache server, if it is still the process recorded.
func (st *State) stopCache() error {
	if st.CachePID == 0 {
		return nil
	}

	return qemu.StopProcess(st.CachePID, st.CacheComm, 5*time.Second)
}

// CacheRunning reports whether the cluster's image cache server is alive.
func (st *State) CacheRunning() bool {
	return st.CachePID != 0 && qemu.Running(st.CachePID, st.CacheComm)
}

// commOf is the kernel's name for a process started from path: its base
// name, cut to 15 bytes.
func commOf(path string) string {
	c := filepath.Base(path)
	if len(c) > 15 {
		c = c[:15]
	}

	return c
}
