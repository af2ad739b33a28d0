package configs

import (
	"fmt"
	"strings"
)

// diffContext is how many unchanged lines surround each change.
const diffContext = 3

// maxEditDistance caps the Myers search; beyond it the configs are too
// different for a line-by-line diff to help, and memory grows with its square.
const maxEditDistance = 1000

// Diff returns a unified diff of the YAML of two configs, for showing what
// apply-config --dry-run would change. It is empty when both encode the same.
// A nil config diffs as an empty document.
func Diff(old, new *Config) (string, error) {
	encode := func(c *Config) ([]byte, error) {
		if c == nil {
			return nil, nil
		}

		return c.Encode()
	}

	a, err := encode(old)
	if err != nil {
		return "", fmt.Errorf("error encoding old config: %w", err)
	}

	b, err := encode(new)
	if err != nil {
		return "", fmt.Errorf("error encoding new config: %w", err)
	}

	return DiffYAML(a, b), nil
}

// DiffYAML returns a unified line diff of two texts ("--- a" / "+++ b"
// headers, "@@" hunks with a few lines of context), or "" when they are equal.
func DiffYAML(old, new []byte) string {
	a, b := splitLines(string(old)), splitLines(string(new))

	edits := diffLines(a, b)
	if edits == nil {
		return ""
	}

	var sb strings.Builder

	sb.WriteString("--- a\n+++ b\n")

	for _, h := range hunks(edits) {
		writeHunk(&sb, edits[h.start:h.end])
	}

	return sb.String()
}

// splitLines keeps each line's newline so a missing final newline shows.
func splitLines(s string) []string {
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}

	return lines
}

// edit is one line of the edit script: kept (' '), removed ('-') or added
// ('+'), with its line numbers (1-based) in the old and new text.
type edit struct {
	op       byte
	text     string
	old, new int
}

// diffLines returns the edit script from a to b, or nil when they are equal.
func diffLines(a, b []string) []edit {
	// Common ends are cheap to peel off and keep the search small.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}

	if pre == len(a) && pre == len(b) {
		return nil
	}

	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}

	var out []edit

	for i := range pre {
		out = append(out, edit{' ', a[i], i + 1, i + 1})
	}

	out = append(out, myers(a[pre:len(a)-suf], b[pre:len(b)-suf], pre)...)

	for i := range suf {
		ai, bi := len(a)-suf+i, len(b)-suf+i
		out = append(out, edit{' ', a[ai], ai + 1, bi + 1})
	}

	return out
}

// myers is Myers' O((N+M)D) diff. base offsets the line numbers.
func myers(a, b []string, base int) []edit {
	n, m := len(a), len(b)
	maxD := min(n+m, maxEditDistance)
	off := maxD + 1
	v := make([]int, 2*maxD+3)

	var trace [][]int

	found := false

	for d := 0; d <= maxD && !found; d++ {
		// Only diagonals -d..d matter when backtracking step d; saving just
		// those keeps memory at O(D²) instead of O(D·(N+M)).
		trace = append(trace, append([]int(nil), v[off-d-1:off+d+2]...))

		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}

			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}

			v[off+k] = x

			if x >= n && y >= m {
				found = true

				break
			}
		}
	}

	if !found {
		return replaceAll(a, b, base)
	}

	// Walk back through the saved frontiers to recover the path.
	var rev []edit

	x, y := n, m

	for d := len(trace) - 1; d >= 0; d-- {
		vd := func(k int) int { return trace[d][k+d+1] }
		k := x - y

		var prevK int
		if k == -d || (k != d && vd(k-1) < vd(k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}

		prevX := vd(prevK)
		prevY := prevX - prevK

		for x > prevX && y > prevY {
			x--
			y--
			rev = append(rev, edit{' ', a[x], base + x + 1, base + y + 1})
		}

		if d == 0 {
			break
		}

		if x == prevX {
			y--
			rev = append(rev, edit{'+', b[y], base + x, base + y + 1})
		} else {
			x--
			rev = append(rev, edit{'-', a[x], base + x + 1, base + y})
		}
	}

	out := make([]edit, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}

	return out
}

func replaceAll(a, b []string, base int) []edit {
	out := make([]edit, 0, len(a)+len(b))

	for i, l := range a {
		out = append(out, edit{'-', l, base + i + 1, base})
	}

	for i, l := range b {
		out = append(out, edit{'+', l, base + len(a), base + i + 1})
	}

	return out
}

type span struct{ start, end int }

// hunks groups changes that are close enough to share context.
func hunks(edits []edit) []span {
	var out []span

	for i := 0; i < len(edits); i++ {
		if edits[i].op == ' ' {
			continue
		}

		start := max(i-diffContext, 0)
		end := i

		// Extend while the next change is within two contexts' reach.
		for j := i; j < len(edits); j++ {
			if edits[j].op != ' ' {
				end = j
			} else if j-end > 2*diffContext {
				break
			}
		}

		end = min(end+diffContext+1, len(edits))

		if n := len(out); n > 0 && start <= out[n-1].end {
			out[n-1].end = end
		} else {
			out = append(out, span{start, end})
		}

		i = end - 1
	}

	return out
}

func writeHunk(sb *strings.Builder, h []edit) {
	var oldStart, newStart, oldLen, newLen int

	for _, e := range h {
		if e.op != '+' {
			if oldLen == 0 {
				oldStart = e.old
			}

			oldLen++
		}

		if e.op != '-' {
			if newLen == 0 {
				newStart = e.new
			}

			newLen++
		}
	}

	// Unified diff convention: an empty side starts at the line before.
	if oldLen == 0 {
		oldStart = h[0].old
	}

	if newLen == 0 {
		newStart = h[0].new
	}

	fmt.Fprintf(sb, "@@ -%d,%d +%d,%d @@\n", oldStart, oldLen, newStart, newLen)

	for _, e := range h {
		sb.WriteByte(e.op)
		sb.WriteString(e.text)

		if !strings.HasSuffix(e.text, "\n") {
			sb.WriteString("\n\\ No newline at end of file\n")
		}
	}
}
