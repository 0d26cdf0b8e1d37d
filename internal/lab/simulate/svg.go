package simulate

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/svgplot"
)

// Chart geometry, in SVG user units.
const (
	svgWidth, svgHeight = 960, 540
	plotLeft, plotRight = 80, svgWidth - 230
	plotTop, plotBottom = 64, svgHeight - 64
)

// SVG draws r as a self-contained SVG line chart: simulated time across,
// cumulative proceeded attempts up, one coloured step line and legend entry
// per actor, titled with the scenario's name.
func SVG(r *Result) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	maxN := 1
	for _, a := range r.Actors {
		maxN = max(maxN, a.Proceeded)
	}
	yStep := svgplot.NiceStep(float64(maxN) / 5)
	yTop := math.Ceil(float64(maxN)/yStep) * yStep
	span := r.duration
	if span <= 0 {
		span = time.Second
	}
	x := func(d time.Duration) float64 {
		return plotLeft + float64(d)/float64(span)*(plotRight-plotLeft)
	}
	y := func(n float64) float64 {
		return plotBottom - n/yTop*(plotBottom-plotTop)
	}

	w(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	w(`<title>%s</title>`+"\n", svgplot.Esc(r.Scenario))
	w(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w(`<text x="%d" y="34" font-size="18" font-weight="bold" fill="#222">%s</text>`+"\n", plotLeft, svgplot.Esc(r.Scenario))

	// Grid, ticks and tick labels.
	w(`<g font-size="12" fill="#444">` + "\n")
	svgplot.YTicks(&b, plotLeft, plotRight, yTop, yStep, y)
	xStep := niceTimeStep(span)
	for d := time.Duration(0); d <= span; d += xStep {
		xx := x(d)
		w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e4e4e4"/>`+"\n", xx, plotTop, xx, plotBottom)
		w(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#444"/>`+"\n", xx, plotBottom, xx, plotBottom+5)
		w(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xx, plotBottom+20, shortDuration(d))
	}
	w("</g>\n")

	// Axes and their labels.
	w(`<path d="M%d %dV%dH%d" fill="none" stroke="#444"/>`+"\n", plotLeft, plotTop, plotBottom, plotRight)
	w(`<text x="%d" y="%d" font-size="13" fill="#222" text-anchor="middle">simulated time</text>`+"\n",
		(plotLeft+plotRight)/2, plotBottom+46)
	w(`<text transform="translate(24 %d) rotate(-90)" font-size="13" fill="#222" text-anchor="middle">cumulative proceeded attempts</text>`+"\n",
		(plotTop+plotBottom)/2)

	// One step line per actor, at most one vertical jump per pixel column.
	for i, a := range r.Actors {
		color := svgplot.Palette[i%len(svgplot.Palette)]
		var d strings.Builder
		fmt.Fprintf(&d, "M%.1f %.1f", x(0), y(0))
		var pts []point
		if i < len(r.series) {
			pts = r.series[i]
		}
		for j, p := range pts {
			if j+1 < len(pts) && math.Round(x(pts[j+1].at)) == math.Round(x(p.at)) {
				continue
			}
			fmt.Fprintf(&d, "H%.1fV%.1f", x(p.at), y(float64(p.n)))
		}
		fmt.Fprintf(&d, "H%.1f", x(span))
		w(`<path d="%s" fill="none" stroke="%s" stroke-width="2.2" stroke-linejoin="round"><title>%s</title></path>`+"\n",
			d.String(), color, svgplot.Esc(a.Name))

		// Legend entry.
		ly := plotTop + 12 + i*24
		w(`<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", plotRight+20, ly, plotRight+44, ly, color)
		w(`<text x="%d" y="%d" font-size="13" fill="#222">%s <tspan fill="#666">(%d)</tspan></text>`+"\n",
			plotRight+52, ly+4, svgplot.Esc(a.Name), a.Proceeded)
	}
	w("</svg>\n")
	return b.Bytes()
}

// niceTimeStep picks a round tick interval giving at most 12 ticks over span.
func niceTimeStep(span time.Duration) time.Duration {
	const day = 24 * time.Hour
	for _, s := range []time.Duration{
		time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond,
		time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
		time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour,
		day, 2 * day, 7 * day,
	} {
		if span/s <= 12 {
			return s
		}
	}
	return 7 * day
}

// shortDuration writes d without trailing zero units: "6h", "1h30m", "45s".
func shortDuration(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return config.FormatDuration(d)
}
