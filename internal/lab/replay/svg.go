package replay

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/tollgate-auth/tollgate/internal/lab/svgplot"
)

// Chart geometry, in SVG user units: two panels side by side.
const (
	svgWidth, svgHeight = 960, 540
	panelTop, panelBot  = 104, svgHeight - 80
	panelWidth          = 380
)

// SVG draws r as a self-contained SVG bar chart in two panels, one bar per
// policy in each: on the left the seconds of delay real users would have
// waited (the cost), on the right the attempts by others that would have
// been stopped (the gain; the original answers too, when recorded).
func SVG(r *Report) []byte {
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	title := "tollgate-lab replay: " + strings.Join(r.Inputs, ", ")
	w(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	w(`<title>%s</title>`+"\n", svgplot.Esc(title))
	w(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w(`<text x="80" y="34" font-size="18" font-weight="bold" fill="#222">%s</text>`+"\n", svgplot.Esc(title))
	w(`<text x="80" y="56" font-size="13" fill="#666">%d attempts, %d by real users</text>`+"\n", r.Attempts, r.RealAttempts)

	type bar struct {
		name  string
		color string
		v     float64
		label string
	}
	var delays, stopped []bar
	if r.Baseline != nil {
		f := r.Baseline.Total
		stopped = append(stopped, bar{r.Baseline.Name, "#999999", float64(f.OtherStopped), fmt.Sprint(f.OtherStopped)})
	}
	for i, c := range r.Candidates {
		color := svgplot.Palette[i%len(svgplot.Palette)]
		secs := float64(c.Total.RealDelayMS) / 1000
		delays = append(delays, bar{c.Name, color, secs, formatMS(c.Total.RealDelayMS)})
		stopped = append(stopped, bar{c.Name, color, float64(c.Total.OtherStopped), fmt.Sprint(c.Total.OtherStopped)})
	}
	panel := func(left int, heading string, bars []bar) {
		maxV := 1.0
		for _, br := range bars {
			maxV = max(maxV, br.v)
		}
		step := svgplot.NiceStep(maxV / 5)
		top := math.Ceil(maxV/step) * step
		y := func(v float64) float64 { return panelBot - v/top*(panelBot-panelTop) }
		right := left + panelWidth
		w(`<text x="%d" y="%d" font-size="14" font-weight="bold" fill="#222">%s</text>`+"\n", left, panelTop-16, svgplot.Esc(heading))
		w(`<g font-size="12" fill="#444">` + "\n")
		svgplot.YTicks(&b, left, right, top, step, y)
		w("</g>\n")
		w(`<path d="M%d %dV%dH%d" fill="none" stroke="#444"/>`+"\n", left, panelTop, panelBot, right)
		if len(bars) == 0 {
			return
		}
		slot := float64(panelWidth) / float64(len(bars))
		width := min(slot*0.6, 80)
		for i, br := range bars {
			x := float64(left) + slot*float64(i) + (slot-width)/2
			yy := y(br.v)
			w(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %s</title></rect>`+"\n",
				x, yy, width, panelBot-yy, br.color, svgplot.Esc(br.name), svgplot.Esc(br.label))
			w(`<text x="%.1f" y="%.1f" font-size="12" fill="#222" text-anchor="middle">%s</text>`+"\n", x+width/2, yy-6, svgplot.Esc(br.label))
			w(`<text x="%.1f" y="%d" font-size="12" fill="#222" text-anchor="middle">%s</text>`+"\n", x+width/2, panelBot+20, svgplot.Esc(br.name))
		}
	}
	panel(80, "real users' delay, seconds", delays)
	panel(80+panelWidth+100, "attempts by others stopped", stopped)
	w("</svg>\n")
	return b.Bytes()
}
