package talosconfig

import (
	"encoding/base64"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/talosbox/talosbox/internal/pki"
)

// WriteContexts prints the contexts as a table (`talosctl config contexts`):
// CURRENT NAME ENDPOINTS NODES, "*" marking the current context, and at most
// three nodes before an ellipsis.
func (c *Config) WriteContexts(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)

	fmt.Fprintln(tw, "CURRENT\tNAME\tENDPOINTS\tNODES")

	for _, name := range c.Names() {
		ctx := c.Contexts[name]

		current := ""
		if name == c.Context {
			current = "*"
		}

		nodes := strings.Join(ctx.Nodes, ",")
		if len(ctx.Nodes) > 3 {
			nodes = strings.Join(ctx.Nodes[:3], ",") + "..."
		}

		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", current, name, strings.Join(ctx.Endpoints, ","), nodes)
	}

	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write contexts: %w", err)
	}

	return nil
}

// Info describes the context in use (`talosctl config info`).
type Info struct {
	Context   string    `json:"context" yaml:"context"`
	Nodes     []string  `json:"nodes" yaml:"nodes"`
	Endpoints []string  `json:"endpoints" yaml:"endpoints"`
	Roles     []string  `json:"roles" yaml:"roles"`
	NotAfter  time.Time `json:"certNotAfter,omitzero" yaml:"certNotAfter,omitempty"`
	// ExpiresIn is NotAfter relative to the time Info was computed, for
	// example "364 days from now" or "3 hours ago".
	ExpiresIn string `json:"certTTL,omitempty" yaml:"certTTL,omitempty"`
}

// Info reports the context in use, with the roles (subject organizations)
// and expiry of its client certificate when it has one.
func (c *Config) Info(override string, now time.Time) (Info, error) {
	name, ctx, err := c.Current(override)
	if err != nil {
		return Info{}, err
	}

	info := Info{Context: name, Nodes: ctx.Nodes, Endpoints: ctx.Endpoints}

	if ctx.Crt == "" {
		return info, nil
	}

	pemCrt, err := base64.StdEncoding.DecodeString(ctx.Crt)
	if err != nil {
		return Info{}, fmt.Errorf("context %q: crt: invalid base64: %w", name, err)
	}

	crt, err := pki.ParseCertificatePEM(pemCrt)
	if err != nil {
		return Info{}, fmt.Errorf("context %q: crt: %w", name, err)
	}

	info.Roles = slices.Sorted(slices.Values(crt.Subject.Organization))
	info.NotAfter = crt.NotAfter.UTC()
	info.ExpiresIn = relativeTime(crt.NotAfter, now)

	return info, nil
}

// String renders the info in the talosctl text layout.
func (i Info) String() string {
	orUndefined := func(list []string) string {
		if len(list) == 0 {
			return "not defined"
		}

		return strings.Join(list, ", ")
	}

	var b strings.Builder

	fmt.Fprintf(&b, "Current context:     %s\n", i.Context)
	fmt.Fprintf(&b, "Nodes:               %s\n", orUndefined(i.Nodes))
	fmt.Fprintf(&b, "Endpoints:           %s\n", orUndefined(i.Endpoints))

	if len(i.Roles) > 0 {
		fmt.Fprintf(&b, "Roles:               %s\n", strings.Join(i.Roles, ", "))
	}

	if i.ExpiresIn != "" {
		fmt.Fprintf(&b, "Certificate expires: %s (%s)\n", i.ExpiresIn, i.NotAfter.Format("2006-01-02"))
	}

	return b.String()
}

// relativeTime renders t against now in the largest whole unit.
func relativeTime(t, now time.Time) string {
	d, suffix := t.Sub(now), "from now"
	if d < 0 {
		d, suffix = -d, "ago"
	}

	plural := func(n int64, unit string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s %s", unit, suffix)
		}

		return fmt.Sprintf("%d %ss %s", n, unit, suffix)
	}

	switch {
	case d >= 48*time.Hour:
		return plural(int64(d/(24*time.Hour)), "day")
	case d >= 2*time.Hour:
		return plural(int64(d/time.Hour), "hour")
	case d >= time.Minute:
		return plural(int64(d/time.Minute), "minute")
	default:
		return "now"
	}
}
