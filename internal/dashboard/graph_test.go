package dashboard

import (
	"strings"
	"testing"
)

// bars renders series and shows each cell as its block, and which series
// owns it as a digit on a second picture.
func bars(series [][]float64, maxV float64, width, height int) (string, string) {
	var blocksOut, owners strings.Builder

	for i, row := range renderBars(series, maxV, width, height) {
		if i > 0 {
			blocksOut.WriteByte('\n')
			owners.WriteByte('\n')
		}

		for _, c := range row {
			blocksOut.WriteRune(c.r)

			if c.series < 0 {
				owners.WriteByte('.')
			} else {
				owners.WriteByte(byte('0' + c.series))
			}
		}
	}

	return blocksOut.String(), owners.String()
}

func TestRenderBars(t *testing.T) {
	for _, tc := range []struct {
		name          string
		series        [][]float64
		max           float64
		width, height int
		blocks        string
		owners        string
	}{
		{
			name: "empty", series: nil, max: 100, width: 3, height: 2,
			blocks: "   \n   ", owners: "...\n...",
		},
		{
			name: "no size", series: [][]float64{{1}}, max: 1, width: 0, height: 0,
		},
		{
			// Newest on the right; older points than the width drop off.
			name: "one series", series: [][]float64{{100, 0, 25, 50, 100}}, max: 100, width: 4, height: 2,
			blocks: "   █\n ▄██", owners: "...0\n.000",
		},
		{
			name: "fewer points than columns", series: [][]float64{{50}}, max: 100, width: 3, height: 1,
			blocks: "  ▄", owners: "..0",
		},
		{
			// Values past the maximum fill the column, negative ones none.
			name: "clamped", series: [][]float64{{-10, 250}}, max: 100, width: 2, height: 1,
			blocks: " █", owners: ".0",
		},
		{
			// User 25% and system 50% of four rows: the bottom row is
			// user's, the two above system's, the top one empty.
			name: "stacked", series: [][]float64{{25}, {50}}, max: 100, width: 1, height: 4,
			blocks: " \n█\n█\n█", owners: ".\n1\n1\n0",
		},
		{
			// A cell shared by two series shows the one at its middle.
			name: "shared cell", series: [][]float64{{10}, {80}}, max: 100, width: 1, height: 1,
			blocks: "▇", owners: "1",
		},
		{
			name: "auto scale", series: [][]float64{{1, 2, 4}}, max: 0, width: 3, height: 1,
			blocks: "▂▄█", owners: "000",
		},
		{
			name: "all zero auto", series: [][]float64{{0, 0}}, max: 0, width: 2, height: 1,
			blocks: "  ", owners: "..",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocksGot, ownersGot := bars(tc.series, tc.max, tc.width, tc.height)
			if blocksGot != tc.blocks {
				t.Errorf("blocks:\n%q\nwant\n%q", blocksGot, tc.blocks)
			}

			if ownersGot != tc.owners {
				t.Errorf("owners:\n%s\nwant\n%s", ownersGot, tc.owners)
			}
		})
	}
}

func TestStackedMax(t *testing.T) {
	series := [][]float64{{9, 1, 2}, {5, 3}}

	// The last two points sum to 1+5 and 2+3; the oldest is outside.
	if got := stackedMax(series, 2); got != 6 {
		t.Errorf("stackedMax over 2 = %v, want 6", got)
	}

	if got := stackedMax(series, 3); got != 9 {
		t.Errorf("stackedMax over 3 = %v, want 9", got)
	}
}
