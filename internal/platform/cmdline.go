package platform

import (
	"os"
	"strings"
)

// Kernel command line parameters talosbox reads, as Talos names them.
const (
	ParamPlatform = "talos.platform"
	ParamConfig   = "talos.config"
	ParamHostname = "talos.hostname"
)

// Kernel command line parameters of talosbox's own (Talos has none for
// these).
const (
	// ParamFatal says what PID 1 does after a fatal boot error: FatalWait
	// (the default), FatalPowerOff or FatalReboot.
	ParamFatal = "talosbox.fatal"
	// ParamInstallDisk is the install disk (e.g. /dev/vdb) when the
	// config's machine.install.disk does not name one.
	ParamInstallDisk = "talosbox.install.disk"
	// ParamKubelet=0 runs no kubelet on a metal node: one with no way to
	// get the kubelet's image (no registry and no image cache).
	ParamKubelet = "talosbox.kubelet"
)

// What PID 1 does after a fatal error.
const (
	// FatalWait keeps the reason on the console and the machine as it is,
	// for an operator to read: the default, for people.
	FatalWait = "wait"
	// FatalPowerOff powers off at once: a test harness sees the machine
	// stop instead of waiting for a timeout.
	FatalPowerOff = "poweroff"
	// FatalReboot reboots after a short delay, to retry the boot.
	FatalReboot = "reboot"
)

// FatalAction is talosbox.fatal=, FatalWait when unset; an unknown value
// is reported in the second result and waits.
func (c Cmdline) FatalAction() (action string, unknown string) {
	v, ok := c.Get(ParamFatal)
	switch {
	case !ok || v == "" || v == FatalWait:
		return FatalWait, ""
	case v == FatalPowerOff || v == FatalReboot:
		return v, ""
	}

	return FatalWait, v
}

// Cmdline is the parsed kernel command line.
type Cmdline struct {
	params map[string]string
}

// ParseCmdline splits a command line into key=value parameters. Double
// quotes group a value with spaces; a later duplicate wins, as in the
// kernel; a bare word is a key with an empty value.
func ParseCmdline(s string) Cmdline {
	c := Cmdline{params: map[string]string{}}

	for _, field := range splitQuoted(s) {
		k, v, _ := strings.Cut(field, "=")
		c.params[k] = strings.Trim(v, `"`)
	}

	return c
}

// ReadCmdline reads /proc/cmdline.
func ReadCmdline() (Cmdline, error) {
	b, err := os.ReadFile("/proc/cmdline")
	if err != nil {
		return Cmdline{}, err
	}

	return ParseCmdline(string(b)), nil
}

// Get returns a parameter's value.
func (c Cmdline) Get(key string) (string, bool) {
	v, ok := c.params[key]
	return v, ok
}

func splitQuoted(s string) []string {
	var (
		out   []string
		cur   strings.Builder
		quote bool
	)

	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}

	for _, r := range s {
		switch {
		case r == '"':
			quote = !quote
			cur.WriteRune(r)
		case !quote && (r == ' ' || r == '\t' || r == '\n'):
			flush()
		default:
			cur.WriteRune(r)
		}
	}

	flush()

	return out
}
