// Package sysctl applies machine.sysctls by writing the files under
// /proc/sys, as Talos does: no sysctl binary, no /etc/sysctl.d.
package sysctl

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultProcSys is where the kernel exposes sysctls.
const DefaultProcSys = "/proc/sys"

// SplitKey splits a key into the parts of its path. Keys are dotted
// ("net.ipv4.ip_forward") or, when a part itself holds dots such as a VLAN
// interface name, slashed ("net/ipv4/conf/eth0.100/forwarding"); a key with
// any slash is taken as slashed, like Talos does. Config validation uses
// it too, so a key the config accepts is one this package can write.
func SplitKey(key string) ([]string, error) {
	if key == "" {
		return nil, errors.New("empty key")
	}

	sep := "."
	if strings.Contains(key, "/") {
		sep = "/"
	}

	parts := strings.Split(key, sep)
	for _, p := range parts {
		// Refusing these keeps every write inside procSys whatever the
		// key says; the kernel has no sysctl named like this anyway.
		switch {
		case p == "":
			return nil, fmt.Errorf("key %q has an empty part", key)
		case p == "." || p == "..":
			return nil, fmt.Errorf("key %q has a %q part", key, p)
		case strings.ContainsAny(p, "\x00\n "):
			return nil, fmt.Errorf("key %q has a space, newline or NUL", key)
		}
	}

	return parts, nil
}

// Path maps a key to its file under procSys (see SplitKey).
func Path(key, procSys string) (string, error) {
	parts, err := SplitKey(key)
	if err != nil {
		return "", err
	}

	return filepath.Join(append([]string{procSys}, parts...)...), nil
}

// Apply writes every sysctl, in key order so that a log of the writes is
// reproducible. It does not stop at the first failure: the kernel rejects
// values one by one, and the user wants to see every rejected key at once.
func Apply(sysctls map[string]string, procSys string) error {
	keys := make([]string, 0, len(sysctls))
	for k := range sysctls {
		keys = append(keys, k)
	}

	slices.Sort(keys)

	var errs []error

	for _, k := range keys {
		if err := write(k, sysctls[k], procSys); err != nil {
			errs = append(errs, err)
		}
	}

	return errors.Join(errs...)
}

func write(key, value, procSys string) error {
	p, err := Path(key, procSys)
	if err != nil {
		return fmt.Errorf("sysctl %s: %w", key, err)
	}

	// No O_CREATE: /proc/sys cannot grow files, and in a test tree a
	// missing file must read as an unknown key too.
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_TRUNC, 0)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sysctl %s: no such key in this kernel: %w", key, err)
	}

	if err != nil {
		return fmt.Errorf("sysctl %s: %w", key, err)
	}

	// The kernel parses the value in the write call, so the write error
	// (EINVAL for "abc" into an integer) is the one that matters.
	_, werr := f.WriteString(value)
	cerr := f.Close()

	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("sysctl %s = %q: %w", key, value, err)
	}

	return nil
}

// Read returns a sysctl's current value without the kernel's trailing
// newline; inner whitespace (the tab in ip_local_port_range) is kept.
func Read(key, procSys string) (string, error) {
	p, err := Path(key, procSys)
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", key, err)
	}

	b, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("sysctl %s: %w", key, err)
	}

	return strings.TrimSuffix(string(b), "\n"), nil
}
