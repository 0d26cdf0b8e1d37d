package attack

import (
	"bytes"
	"fmt"
	"math"

	"github.com/tollgate-auth/tollgate/internal/lab/svgplot"
)

// Chart geometry, in SVG user units.
const (
	svgWidth, svgHeight = 960, 540
	plotLeft, plotRight = 80, svgWidth - 200
	plotTop, plotBottom = 64, svgHeight - 64
)

// SVG draws a search's progress as a self-contained SVG chart: evaluations
// across, score up; a dot per strategy's score, the best so far as a step
// line, and the bound as a dashed line.
func SVG(r Result) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	top := math.Max(r.Objective.Bound, 1)
	for _, s := range r.Scores {
		top = math.Max(top, s)
	}
	yStep := svgplot.NiceStep(top / 5)
	yTop := math.Ceil(top/yStep) * yStep
	n := max(len(r.Scores), 1)
	x := func(i int) float64 { return plotLeft + float64(i)/float64(n)*(plotRight-plotLeft) }
	y := func(v float64) float64 { return plotBottom - math.Max(v, 0)/yTop*(plotBottom-plotTop) }
	title := fmt.Sprintf("tollgate-lab attack: %s", r.Objective.Name)

	w(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	w(`<title>%s</title>`+"\n", svgplot.Esc(title))
	w(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w(`<text x="%d" y="34" font-size="18" font-weight="bold" fill="#222">%s</text>`+"\n", plotLeft, svgplot.Esc(title))

	w(`<g font-size="12" fill="#444">` + "\n")
	svgplot.YTicks(&b, plotLeft, plotRight, yTop, yStep, y)
	xStep := int(svgplot.NiceStep(float64(n) / 10))
	for i := 0; i <= n; i += xStep {
		w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#444"/>`+"\n", x(i), plotBottom, x(i), plotBottom+5)
		w(`<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", x(i), plotBottom+20, i)
	}
	w("</g>\n")
	w(`<path d="M%d %dV%dH%d" fill="none" stroke="#444"/>`+"\n", plotLeft, plotTop, plotBottom, plotRight)
	w(`<text x="%d" y="%d" font-size="13" fill="#222" text-anchor="middle">strategies evaluated</text>`+"\n",
		(plotLeft+plotRight)/2, plotBottom+46)
	w(`<text transform="translate(24 %d) rotate(-90)" font-size="13" fill="#222" text-anchor="middle">%s</text>`+"\n",
		(plotTop+plotBottom)/2, svgplot.Esc(r.Objective.Unit))

	scoreColor, bestColor, boundColor := svgplot.Palette[5], svgplot.Palette[0], svgplot.Palette[1]
	for i, s := range r.Scores {
		w(`<circle cx="%.1f" cy="%.1f" r="2" fill="%s"/>`+"\n", x(i)+0.5*(x(1)-x(0)), y(s), scoreColor)
	}
	if len(r.Progress) > 0 {
		var d bytes.Buffer
		fmt.Fprintf(&d, "M%.1f %.1f", x(0), y(r.Progress[0]))
		for i, p := range r.Progress {
			fmt.Fprintf(&d, "V%.1fH%.1f", y(p), x(i+1))
		}
		w(`<path d="%s" fill="none" stroke="%s" stroke-width="2.2"><title>best so far</title></path>`+"\n", d.String(), bestColor)
	}
	w(`<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="6 4"><title>bound</title></line>`+"\n",
		plotLeft, y(r.Objective.Bound), plotRight, y(r.Objective.Bound), boundColor)

	legend := []struct{ color, text string }{
		{bestColor, fmt.Sprintf("best so far (%g)", r.Best)},
		{scoreColor, "each strategy"},
		{boundColor, fmt.Sprintf("bound (%g)", r.Objective.Bound)},
	}
	for i, l := range legend {
		ly := plotTop + 12 + i*24
		w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", plotRight+16, ly, plotRight+40, ly, l.color)
		w(`<text x="%d" y="%d" font-size="13" fill="#222">%s</text>`+"\n", plotRight+48, ly+4, svgplot.Esc(l.text))
	}
	w("</svg>\n")
	return b.Bytes()
}
