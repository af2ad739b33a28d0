package global

import (
	"fmt"
	"strings"
)

func OrDash(s string) string {
	if s == "" {
		return "-"
	}

	return s
}

// HumanBytes renders a size as talosctl does: decimal units, one decimal.
func HumanBytes(b uint64) string {
	const unit = 1000

	if b < unit {
		return fmt.Sprintf("%d B", b)
	}

	div, exp := uint64(unit), 0
	for n := b / unit; n >= unit; n /= unit {
		div *= unit
		exp++
	}

	return fmt.Sprintf("%.1f %cB", float64(b)/float64(div), "kMGTPE"[exp])
}

func JoinComma(s []string) string { return strings.Join(s, ",") }
