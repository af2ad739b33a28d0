package dashboard

import (
	"fmt"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/rivo/tview"
)

const (
	// notAvailable is a value the node did not give, as Talos shows it.
	notAvailable = "n/a"
	// noData is shown before the first answer.
	noData = "..."
	none   = "<none>"
)

// field is a name and its value, shown next to each other.
type field struct {
	Name, Value string
}

// fieldList renders fields one a line, the values aligned past the
// longest name. Values may carry tview color tags; names are plain.
func fieldList(fields []field) string {
	width := 0
	for _, f := range fields {
		width = max(width, len(f.Name))
	}

	lines := make([]string, len(fields))
	for i, f := range fields {
		lines[i] = fmt.Sprintf("[::b]%-*s[::-] %s", width, f.Name, f.Value)
	}

	return strings.Join(lines, "\n")
}

// orNA is s, or "n/a" when empty; s is escaped for tview.
func orNA(s string) string {
	if s == "" {
		return notAvailable
	}

	return tview.Escape(s)
}

// joinOr joins values with ", ", or is def when there are none.
func joinOr(values []string, def string) string {
	if len(values) == 0 {
		return def
	}

	return tview.Escape(strings.Join(values, ", "))
}

// stateText colors a state the way Talos does: green with a check for a
// good one, red with a cross for a bad one, as is otherwise.
func stateText(s string) string {
	if s == "" {
		return notAvailable
	}

	s = strings.ToUpper(s[:1]) + strings.ToLower(s[1:])

	switch s {
	case "Running", "Healthy", "True", "Finished":
		return mark(s, true)
	case "Stopped", "Unhealthy", "False", "Failed":
		return mark(s, false)
	}

	return tview.Escape(s)
}

// boolStatus is yes marked good, or no marked bad.
func boolStatus(ok bool, yes, no string) string {
	if ok {
		return mark(yes, true)
	}

	return mark(no, false)
}

func mark(s string, ok bool) string {
	if ok {
		return "[green]√ " + tview.Escape(s) + "[-]"
	}

	return "[red]× " + tview.Escape(s) + "[-]"
}

// formatUptime is d to the second, with days split off past a day, as
// Talos shows it: "3d4h5m6s".
func formatUptime(d time.Duration) string {
	const day = 24 * time.Hour

	d = d.Round(time.Second)
	if d < 0 {
		d = 0
	}

	if d >= day {
		return fmt.Sprintf("%dd%s", d/day, d%day)
	}

	return d.String()
}

// formatRate is bytes per second in SI units.
func formatRate(bps float64) string {
	return humanize.Bytes(uint64(max(bps, 0))) + "/s"
}

// formatSI is a count in SI units: "12", "1.2 k", "3.4 M".
func formatSI(v float64) string {
	n, unit := humanize.ComputeSI(v)

	if unit == "" {
		return fmt.Sprintf("%.0f", n)
	}

	return fmt.Sprintf("%.1f %s", n, unit)
}

// formatCPUTime is seconds of CPU as h:mm:ss.cc, like top's TIME+.
func formatCPUTime(secs float64) string {
	cs := int64(secs*100 + 0.5)
	h, rest := cs/360000, cs%360000

	return fmt.Sprintf("%d:%02d:%02d.%02d", h, rest/6000, rest/100%60, rest%100)
}

// truncate shortens s to width columns, marking the cut with "…".
func truncate(s string, width int) string {
	r := []rune(s)

	switch {
	case width <= 0:
		return ""
	case len(r) <= width:
		return s
	case width == 1:
		return "…"
	}

	return string(r[:width-1]) + "…"
}
