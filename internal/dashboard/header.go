package dashboard

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/talosbox/talosbox/internal/client"
)

// osName is what the header calls the node's OS, as its os-release does.
const osName = "talosbox"

// spinner turns once per update of the node on screen, so a frozen
// dashboard is told from a quiet node. Its box corners are in CP437.
var spinner = []string{"┐", "┘", "└", "┌"}

// nodeLabel is how the footer names a node; "" is the endpoint itself.
func nodeLabel(node string) string {
	if node == "" {
		return "(local)"
	}

	return node
}

// hostname is the node's name: networkd's, else the API's, else the node
// as it was given.
func hostname(node string, s *Snapshot) string {
	if s != nil {
		if r := s.Resources; r != nil && r.Hostname != nil && r.Hostname.Hostname != "" {
			return r.Hostname.Hostname
		}

		if s.Hostname != "" {
			return s.Hostname
		}
	}

	return nodeLabel(node)
}

// headerText is the top line: who the node is and how loaded, as Talos's
// header has it (without the CPU frequency, which the API does not give).
func headerText(node string, s *Snapshot, spin int, now time.Time) string {
	if s == nil {
		return fmt.Sprintf("[yellow::b]%s[-:-:-] %s", tview.Escape(nodeLabel(node)), noData)
	}

	version, uptime, cpus, mem, procs, cpu, ram := notAvailable, notAvailable, notAvailable, notAvailable, notAvailable, notAvailable, notAvailable

	if tag := s.Version.GetVersion().GetTag(); tag != "" {
		version = tag
	}

	if bt := s.Stat.GetBootTime(); bt > 0 {
		uptime = formatUptime(now.Sub(time.Unix(int64(bt), 0)))
	}

	if n := len(s.Stat.GetCpu()); n > 0 {
		cpus = strconv.Itoa(n) + "x CPU"
	}

	if s.Mem.GetMemtotal() > 0 {
		mem = humanize.IBytes(s.Mem.GetMemtotal() << 10)
		ram = fmt.Sprintf("%.1f%%", float64(MemUsed(s.Mem))/float64(s.Mem.GetMemtotal()<<10)*100)
	}

	if s.Procs != nil {
		procs = strconv.Itoa(len(s.Procs))
	}

	if s.HaveCPU {
		cpu = fmt.Sprintf("%.1f%%", s.CPU.Busy()*100)
	}

	text := fmt.Sprintf("[green]%s[-] [yellow::b]%s[-:-:-] %s (%s): uptime %s, %s, %s RAM, PROCS %s, CPU %s, RAM %s",
		spinner[spin%len(spinner)], tview.Escape(hostname(node, s)), osName, tview.Escape(version),
		uptime, cpus, mem, procs, cpu, ram)

	if s.Err != nil {
		// One line has room for the first failure only; the rest show as
		// their parts' "n/a".
		msg, _, _ := strings.Cut(client.Message(s.Err), "\n")
		text += " [red]× " + tview.Escape(msg) + "[-]"
	}

	return text
}

// Footer is the bottom line: the nodes, the one on screen in red, and the
// screens with their keys. It is drawn to its width, so the node list
// slides to keep the selected node in view.
type Footer struct {
	*tview.Box

	nodes   []string
	node    int
	screens []string
	screen  int
	paused  bool
}

// NewFooter lists nodes and screens.
func NewFooter(nodes, screens []string) *Footer {
	return &Footer{Box: tview.NewBox(), nodes: nodes, screens: screens}
}

// Draw implements tview.Primitive.
func (f *Footer) Draw(screen tcell.Screen) {
	f.DrawForSubclass(screen, f)

	x, y, width, _ := f.GetInnerRect()
	tview.Print(screen, footerText(f.nodes, f.node, f.screens, f.screen, f.paused, width), x, y, width, tview.AlignLeft, tcell.ColorDefault)
}

// footerText renders "[node1 | node2] --- [F1: Summary] --- [Monitor]"
// into width columns: the screens always, and as many nodes around the
// selected one as fit, "‹"/"›" marking those left out.
func footerText(nodes []string, sel int, screens []string, selScreen int, paused bool, width int) string {
	var tabs strings.Builder

	tabsWidth := 0

	for i, name := range screens {
		if i > 0 {
			tabs.WriteString(" --- ")

			tabsWidth += 5
		}

		if i == selScreen {
			fmt.Fprintf(&tabs, "[[red]%s[-]]", name)

			tabsWidth += len(name) + 2
		} else {
			label := fmt.Sprintf("[F%d: %s]", i+1, name)
			tabs.WriteString(tview.Escape(label))

			tabsWidth += len(label)
		}
	}

	if paused {
		tabs.WriteString(" --- [[yellow]PAUSED[-]]")

		tabsWidth += 13
	}

	// "[" and "] --- " around the nodes.
	budget := width - tabsWidth - 7
	lo, hi := nodeWindow(nodes, sel, budget)

	var b strings.Builder

	b.WriteString("[")

	if lo > 0 {
		b.WriteString("‹ ")
	}

	for i := lo; i < hi; i++ {
		if i > lo {
			b.WriteString(" | ")
		}

		label := nodeLabel(nodes[i])
		if hi-lo == 1 {
			label = truncate(label, budget-arrows(lo, hi, len(nodes)))
		}

		if i == sel {
			fmt.Fprintf(&b, "[red]%s[-]", tview.Escape(label))
		} else {
			b.WriteString(tview.Escape(label))
		}
	}

	if hi < len(nodes) {
		b.WriteString(" ›")
	}

	b.WriteString("] --- ")
	b.WriteString(tabs.String())

	return b.String()
}

// arrows is the width of the overflow marks shown for window [lo, hi).
func arrows(lo, hi, n int) int {
	w := 0
	if lo > 0 {
		w += 2
	}

	if hi < n {
		w += 2
	}

	return w
}

// nodeWindow is the range of nodes around sel whose labels, separators
// and overflow marks fit in budget columns; at least sel itself.
func nodeWindow(nodes []string, sel, budget int) (int, int) {
	if len(nodes) == 0 {
		return 0, 0
	}

	fits := func(lo, hi int) bool {
		w := arrows(lo, hi, len(nodes))
		for i := lo; i < hi; i++ {
			if i > lo {
				w += 3
			}

			w += len([]rune(nodeLabel(nodes[i])))
		}

		return w <= budget
	}

	lo, hi := sel, sel+1

	// Grow right, then left, while the window still fits.
	for grew := true; grew; {
		grew = false

		if hi < len(nodes) && fits(lo, hi+1) {
			hi++
			grew = true
		}

		if lo > 0 && fits(lo-1, hi) {
			lo--
			grew = true
		}
	}

	return lo, hi
}
