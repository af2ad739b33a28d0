package dashboard

import (
	"math"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// blocks are the eighths of a cell, bottom up: a bar's top is drawn to an
// eighth of a row. They are in CP437 too, so the Linux console shows them.
var blocks = []rune{' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'}

// barCell is one cell of a rendered graph: the block drawn and the index
// of the series it belongs to (-1 for an empty cell).
type barCell struct {
	r      rune
	series int
}

// renderBars draws stacked series as columns of bars, newest on the
// right, into height rows of width cells (row 0 is the top). Series are
// aligned on their newest points. maxV is the value of a full column; the
// series' largest sum when maxV <= 0.
func renderBars(series [][]float64, maxV float64, width, height int) [][]barCell {
	width, height = max(width, 0), max(height, 0)

	grid := make([][]barCell, height)
	for i := range grid {
		grid[i] = make([]barCell, width)
		for j := range grid[i] {
			grid[i][j] = barCell{r: ' ', series: -1}
		}
	}

	if width == 0 || height == 0 || len(series) == 0 {
		return grid
	}

	if maxV <= 0 {
		maxV = stackedMax(series, width)
	}

	if maxV <= 0 {
		return grid
	}

	for col := range width {
		// ago is how many points before the newest this column shows.
		ago := width - 1 - col
		cum := 0.0

		// tops are each series' cumulative top, in eighths of a row.
		tops := make([]int, len(series))

		for i, s := range series {
			if ago < len(s) {
				cum += max(s[len(s)-1-ago], 0)
			}

			tops[i] = int(math.Round(min(cum/maxV, 1) * float64(height*8)))
		}

		total := tops[len(tops)-1]

		for row := range height {
			bottom := (height - 1 - row) * 8 // eighths below this cell
			if total <= bottom {
				continue
			}

			// The cell shows the series that covers the middle of its
			// filled part: one cell has one color.
			fill := min(total-bottom, 8)
			mid := float64(bottom) + float64(fill)/2
			owner := 0

			for i, top := range tops {
				if float64(top) > mid {
					owner = i

					break
				}
			}

			grid[row][col] = barCell{r: blocks[fill], series: owner}
		}
	}

	return grid
}

// stackedMax is the largest sum of the series over the last width points.
func stackedMax(series [][]float64, width int) float64 {
	m := 0.0

	for ago := range width {
		sum := 0.0

		for _, s := range series {
			if ago < len(s) {
				sum += max(s[len(s)-1-ago], 0)
			}
		}

		m = max(m, sum)
	}

	return m
}

// Graph is a titled bar graph of one or more stacked series.
type Graph struct {
	*tview.Box

	title, scale string
	series       [][]float64
	colors       []tcell.Color
	// max is a full column's value; with auto, the data's largest value
	// when that is more.
	max  float64
	auto bool
}

// NewGraph is a graph whose series are drawn in colors. A full column is
// maxV, or with auto at least maxV: a scale that grows with the data, but
// does not make noise look like a full load.
func NewGraph(maxV float64, auto bool, colors ...tcell.Color) *Graph {
	return &Graph{Box: tview.NewBox(), colors: colors, max: maxV, auto: auto}
}

// Set replaces the graph's title, its scale label (shown on the right of
// the title row) and its series.
func (g *Graph) Set(title, scale string, series ...[]float64) {
	g.title, g.scale, g.series = title, scale, series
}

// Draw implements tview.Primitive.
func (g *Graph) Draw(screen tcell.Screen) {
	g.DrawForSubclass(screen, g)

	x, y, width, height := g.GetInnerRect()
	if width <= 0 || height <= 0 {
		return
	}

	tview.Print(screen, g.title, x, y, width, tview.AlignLeft, tcell.ColorDefault)

	if g.scale != "" {
		tview.Print(screen, g.scale, x, y, width, tview.AlignRight, tcell.ColorDefault)
	}

	maxV := g.max
	if g.auto {
		maxV = max(maxV, stackedMax(g.series, width))
	}

	for row, cells := range renderBars(g.series, maxV, width, height-1) {
		for col, c := range cells {
			if c.series < 0 {
				continue
			}

			style := tcell.StyleDefault
			if c.series < len(g.colors) {
				style = style.Foreground(g.colors[c.series])
			}

			screen.SetContent(x+col, y+1+row, c.r, nil, style)
		}
	}
}
