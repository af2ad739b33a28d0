package configs_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/talosbox/talosbox/configs"
)

func TestDiffYAMLGolden(t *testing.T) {
	t.Parallel()

	lines := func(n int, edit func(i int) string) string {
		var sb strings.Builder
		for i := 1; i <= n; i++ {
			sb.WriteString(edit(i) + "\n")
		}

		return sb.String()
	}
	plain := func(i int) string { return "l" + strconv.Itoa(i) }

	tests := []struct {
		name, old, new, want string
	}{
		{name: "equal", old: "a\nb\n", new: "a\nb\n", want: ""},
		{name: "both empty", old: "", new: "", want: ""},
		{
			name: "one line changed",
			old:  lines(10, plain),
			new: lines(10, func(i int) string {
				if i == 5 {
					return "five"
				}

				return plain(i)
			}),
			want: "--- a\n+++ b\n@@ -2,7 +2,7 @@\n l2\n l3\n l4\n-l5\n+five\n l6\n l7\n l8\n",
		},
		{
			name: "distant changes make two hunks",
			old:  lines(20, plain),
			new: lines(20, func(i int) string {
				if i == 1 || i == 20 {
					return "x"
				}

				return plain(i)
			}),
			want: "--- a\n+++ b\n@@ -1,4 +1,4 @@\n-l1\n+x\n l2\n l3\n l4\n@@ -17,4 +17,4 @@\n l17\n l18\n l19\n-l20\n+x\n",
		},
		{
			name: "near changes share a hunk",
			old:  lines(12, plain),
			new: lines(12, func(i int) string {
				if i == 3 || i == 9 {
					return "x"
				}

				return plain(i)
			}),
			want: "--- a\n+++ b\n@@ -1,12 +1,12 @@\n l1\n l2\n-l3\n+x\n l4\n l5\n l6\n l7\n l8\n-l9\n+x\n l10\n l11\n l12\n",
		},
		{
			name: "insertion and deletion",
			old:  "a\nb\nc\n",
			new:  "a\nc\nd\n",
			want: "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n c\n+d\n",
		},
		{
			name: "from nothing",
			old:  "",
			new:  "a\nb\n",
			want: "--- a\n+++ b\n@@ -0,0 +1,2 @@\n+a\n+b\n",
		},
		{
			name: "missing final newline",
			old:  "a\nb\n",
			new:  "a\nb",
			want: "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()

			if got := configs.DiffYAML([]byte(tc.old), []byte(tc.new)); got != tc.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// applyDiff applies a unified diff made by DiffYAML to old, checking every
// context and removed line against old on the way.
func applyDiff(old []string, diff string) ([]string, error) {
	if diff == "" {
		return old, nil
	}

	body, ok := strings.CutPrefix(diff, "--- a\n+++ b\n")
	if !ok {
		return nil, fmt.Errorf("missing headers")
	}

	var out []string

	pos := 0 // next unread line of old, 0-based

	for line := range strings.SplitSeq(strings.TrimSuffix(body, "\n"), "\n") {
		switch {
		case strings.HasPrefix(line, "@@"):
			var os, ol, ns, nl int
			if _, err := fmt.Sscanf(line, "@@ -%d,%d +%d,%d @@", &os, &ol, &ns, &nl); err != nil {
				return nil, fmt.Errorf("bad hunk header %q: %w", line, err)
			}

			start := os - 1
			if ol == 0 {
				start = os
			}

			if start < pos {
				return nil, fmt.Errorf("hunks overlap at %q", line)
			}

			out = append(out, old[pos:start]...)
			pos = start
		case line[0] == ' ' || line[0] == '-':
			if pos >= len(old) || old[pos] != line[1:] {
				return nil, fmt.Errorf("line %d: diff says %q", pos+1, line)
			}

			if line[0] == ' ' {
				out = append(out, old[pos])
			}

			pos++
		case line[0] == '+':
			out = append(out, line[1:])
		default:
			return nil, fmt.Errorf("unexpected diff line %q", line)
		}
	}

	return append(out, old[pos:]...), nil
}

// TestDiffYAMLApplies checks on random texts that the diff turns old into
// new, including inputs too different for the line search.
func TestDiffYAMLApplies(t *testing.T) {
	t.Parallel()

	rng := rand.New(rand.NewPCG(1, 2))

	randomText := func(n, alphabet int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = "v" + strconv.Itoa(rng.IntN(alphabet))
		}

		return out
	}

	for trial := range 300 {
		n, alphabet := rng.IntN(40), 1+rng.IntN(6)
		if trial%100 == 0 {
			n, alphabet = 3000, 1<<30 // forces the whole-replacement fallback
		}

		a, b := randomText(n, alphabet), randomText(rng.IntN(40)+n/2, alphabet)

		diff := configs.DiffYAML([]byte(joinLines(a)), []byte(joinLines(b)))

		got, err := applyDiff(a, diff)
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, diff)
		}

		if joinLines(got) != joinLines(b) {
			t.Fatalf("trial %d: applying the diff gives\n%q\nwant\n%q\ndiff:\n%s", trial, got, b, diff)
		}

		if (diff == "") != (joinLines(a) == joinLines(b)) {
			t.Fatalf("trial %d: diff emptiness does not match equality", trial)
		}
	}
}

func joinLines(lines []string) string {
	if len(lines) == 0 {
		return ""
	}

	return strings.Join(lines, "\n") + "\n"
}

func TestDiffConfigs(t *testing.T) {
	t.Parallel()

	old := configWith(t, "worker", "{}")
	updated := configWith(t, "worker", `machine: {network: {hostname: w1}, time: {servers: [10.0.0.1]}}`)

	if d, err := configs.Diff(old, old); err != nil || d != "" {
		t.Fatalf("diff of a config with itself = %q, %v", d, err)
	}

	d, err := configs.Diff(old, updated)
	if err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{"+        hostname: w1\n", "+    time:\n", "+        servers:\n", "+            - 10.0.0.1\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}

	if strings.Contains(d, "\n-") {
		t.Errorf("diff removes lines although the change only adds:\n%s", d)
	}

	d, err = configs.Diff(nil, old)
	if err != nil || !strings.HasPrefix(d, "--- a\n+++ b\n@@ -0,0 +1,") {
		t.Fatalf("diff from nil = %q, %v", d, err)
	}
}
