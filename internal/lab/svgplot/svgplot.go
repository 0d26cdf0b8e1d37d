// Package svgplot holds the small helpers the simulator's and the replay's
// SVG charts share: their palette, XML escaping and round axis ticks.
package svgplot

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// Palette is the Okabe–Ito palette, which stays apart for colour-blind
// readers; yellow comes last because it is faint on white. Series take
// its colours in turn.
var Palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

// Esc escapes s for XML text and attribute values.
func Esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// NiceStep rounds raw up to 1, 2 or 5 times a power of ten, at least 1.
func NiceStep(raw float64) float64 {
	if raw <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// FormatTick writes an axis value: whole numbers, thousands as "12k" from
// 10,000 on.
func FormatTick(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.0fk", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

// YTicks writes a chart's horizontal grid lines, tick marks and tick labels
// from 0 to top every step, for a plot from left to right whose y maps a
// value to its height.
func YTicks(out io.Writer, left, right int, top, step float64, y func(float64) float64) {
	for v := 0.0; v <= top+step/2; v += step {
		yy := y(v)
		fmt.Fprintf(out, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e4e4e4"/>`+"\n", left, yy, right, yy)
		fmt.Fprintf(out, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#444"/>`+"\n", left-5, yy, left, yy)
		fmt.Fprintf(out, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-8, yy+4, FormatTick(v))
	}
}
