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
