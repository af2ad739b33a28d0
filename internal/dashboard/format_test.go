package dashboard

import (
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// visible is text as tview prints it on one line of width columns: tags
// taken out, escapes resolved, trailing blanks trimmed.
func visible(t *testing.T, text string, width int) string {
	t.Helper()

	s := tcell.NewSimulationScreen("UTF-8")
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Fini()

	s.SetSize(width, 1)
	tview.Print(s, text, 0, 0, width, tview.AlignLeft, tcell.ColorDefault)

	var b strings.Builder

	for x := range width {
		r, _, _, _ := s.GetContent(x, 0)
		b.WriteRune(r)
	}

	return strings.TrimRight(b.String(), " ")
}

func TestFormatUptime(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Second, "0s"},
		{1500 * time.Millisecond, "2s"},
		{3*time.Hour + 4*time.Minute + 5*time.Second, "3h4m5s"},
		{24 * time.Hour, "1d0s"},
		{50*time.Hour + 7*time.Second, "2d2h0m7s"},
	} {
		if got := formatUptime(tc.in); got != tc.want {
			t.Errorf("formatUptime(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFormatNumbers(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{formatRate(0), "0 B/s"},
		{formatRate(-5), "0 B/s"},
		{formatRate(1500), "1.5 kB/s"},
		{formatRate(2.5e6), "2.5 MB/s"},
		{formatSI(0), "0"},
		{formatSI(999), "999"},
		{formatSI(1234), "1.2 k"},
		{formatSI(5.6e6), "5.6 M"},
		{formatCPUTime(0), "0:00:00.00"},
		{formatCPUTime(61.5), "0:01:01.50"},
		{formatCPUTime(3723.456), "1:02:03.46"},
		{truncate("abcdef", 10), "abcdef"},
		{truncate("abcdef", 4), "abc…"},
		{truncate("abcdef", 1), "…"},
		{truncate("abcdef", 0), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestStateText(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"", "n/a"},
		{"running", "√ Running"},
		{"HEALTHY", "√ Healthy"},
		{"Failed", "× Failed"},
		{"unhealthy", "× Unhealthy"},
		{"booting", "Booting"},
		{"[x]", "[x]"},
	} {
		if got := visible(t, stateText(tc.in), 40); got != tc.want {
			t.Errorf("stateText(%q) shows %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestFieldList(t *testing.T) {
	got := fieldList([]field{{"HOST", "node-a"}, {"CONNECTIVITY", boolStatus(true, "OK", "Failed")}, {"IP", orNA("")}})

	lines := strings.Split(got, "\n")
	want := []string{"HOST         node-a", "CONNECTIVITY √ OK", "IP           n/a"}

	if len(lines) != len(want) {
		t.Fatalf("fieldList: %q", got)
	}

	for i := range want {
		if v := visible(t, lines[i], 40); v != want[i] {
			t.Errorf("line %d shows %q, want %q", i, v, want[i])
		}
	}
}
