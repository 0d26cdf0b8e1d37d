package replay

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

// Report is what a replay found. Its JSON form is the output of -json.
type Report struct {
	// Inputs are the inputs' names, in the order given.
	Inputs []string `json:"inputs"`
	// From and To are the first and last events' times.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Events counts the events read (lines skipped are not).
	Events int64 `json:"events"`
	// Attempts counts checks and attempts; RealAttempts those by real
	// users (see Run).
	Attempts     int64 `json:"attempts"`
	RealAttempts int64 `json:"real_attempts"`
	// Sends counts the code sends, which replay skips.
	Sends int64 `json:"sends_not_replayed"`
	// Skipped counts the lines skipped (Config.SkipBad), SkippedExamples
	// says why for the first few.
	Skipped         int64    `json:"skipped_lines"`
	SkippedExamples []string `json:"skipped_examples,omitempty"`
	// NotLogins counts the events of the inputs that are not login
	// attempts (a Keycloak export's other event types, and errors naming
	// no user), which replay reads past.
	NotLogins int64 `json:"events_not_logins,omitempty"`
	// Baseline is what the original answers did, when the inputs recorded
	// them (tollgate's decision log); nil otherwise.
	Baseline *Result `json:"baseline,omitempty"`
	// Candidates are the candidates' results, in the order given.
	Candidates []Result `json:"candidates"`
}

// Result is what one policy did.
type Result struct {
	// Name is the candidate's name, "original" for the baseline.
	Name string `json:"name"`
	// Total is over every flow; Flows per flow ("tenant/flow" for a
	// tenant other than the default), by name.
	Total Figures       `json:"total"`
	Flows []FlowFigures `json:"flows"`
	// TopPrefixes are the IP prefixes with the most refused attempts,
	// most first.
	TopPrefixes []PrefixCount `json:"top_prefixes"`
	// DelayUnknown is true for a baseline some of whose recorded delays
	// have no length (shadow verdicts logged before computed_delay_ms), so
	// its delay figures are not to be read.
	DelayUnknown bool `json:"delay_unknown,omitempty"`
	// Unreported counts checks this policy let proceed that have no
	// recorded outcome (the original refused them): left unsettled, which
	// tollgate counts as failures.
	Unreported int64 `json:"unreported"`
	// Errors counts events the candidate's engine refused as invalid (a
	// flow its policy lacks, say), ErrorExamples the first few messages.
	Errors        int64    `json:"errors"`
	ErrorExamples []string `json:"error_examples,omitempty"`
}

// Figures are what a policy did to the attempts of one flow, or of all.
type Figures struct {
	// RealAttempts counts real users' attempts; RealDelayed and
	// RealChallenged those answered delay, and captcha (or deny);
	// RealDelayMS and RealDelayMaxMS the sum and the longest of those
	// delays, in milliseconds.
	RealAttempts   int64 `json:"real_attempts"`
	RealDelayed    int64 `json:"real_delayed"`
	RealChallenged int64 `json:"real_challenged"`
	RealDelayMS    int64 `json:"real_delay_ms"`
	RealDelayMaxMS int64 `json:"real_delay_max_ms"`
	// SuccessesRefused counts recorded successes this policy would have
	// refused (delayed or challenged) before the credential was checked.
	SuccessesRefused int64 `json:"successes_refused"`
	// OtherAttempts counts the attempts by no real user (failed, or never
	// settled), OtherStopped those that did not proceed, and StoppedBy
	// those by each reason of their verdict (a verdict with two reasons
	// counts under both).
	OtherAttempts int64            `json:"other_attempts"`
	OtherStopped  int64            `json:"other_stopped"`
	StoppedBy     map[string]int64 `json:"stopped_by"`
}

// FlowFigures are one flow's figures.
type FlowFigures struct {
	Flow string `json:"flow"`
	Figures
}

// PrefixCount is an IP prefix and how many attempts from it a policy
// refused.
type PrefixCount struct {
	// Prefix is the first 8 characters of the prefix's key: enough to
	// look it up in the decision log, nothing more.
	Prefix string `json:"prefix"`
	// Refused counts the refused attempts; when Approximate it is an upper
	// bound, over by at most the figure of the least counted prefix.
	Refused     int64 `json:"refused"`
	Approximate bool  `json:"approximate,omitempty"`
}

// tally adds up one policy's figures.
type tally struct {
	name       string
	total      Figures
	flows      map[string]*Figures
	prefixes   *topK
	unreported int64
	errors     int64
	examples   []string
}

func newTally(name string, counters int) *tally {
	return &tally{name: name, flows: map[string]*Figures{}, prefixes: newTopK(counters)}
}

// figures are the event's flow's figures, made when new.
func (t *tally) figures(ev *Event) *Figures {
	name := ev.Flow
	if ev.Tenant != "" && ev.Tenant != authguard.DefaultTenant {
		name = ev.Tenant + "/" + ev.Flow
	}
	f, ok := t.flows[name]
	if !ok {
		f = &Figures{}
		t.flows[name] = f
	}
	return f
}

// count adds an attempt's verdict v.
func (t *tally) count(it *item, v authguard.Verdict) {
	refused := v.Action != authguard.Proceed
	for _, f := range []*Figures{&t.total, t.figures(&it.ev)} {
		switch {
		case it.real:
			f.RealAttempts++
			switch v.Action {
			case authguard.Delay:
				ms := v.Delay.Milliseconds()
				f.RealDelayed++
				f.RealDelayMS += ms
				f.RealDelayMaxMS = max(f.RealDelayMaxMS, ms)
			case authguard.Captcha, authguard.Deny:
				f.RealChallenged++
			}
		default:
			f.OtherAttempts++
			if refused {
				f.OtherStopped++
				if f.StoppedBy == nil {
					f.StoppedBy = map[string]int64{}
				}
				for _, r := range v.Reasons {
					f.StoppedBy[string(r)]++
				}
			}
		}
	}
	if refused && it.ev.IP.P != "" {
		t.prefixes.add(it.ev.IP.P)
	}
	if refused && it.ev.Outcome == OutcomeSuccess {
		t.successRefused(it)
	}
}

// successRefused counts a recorded success the policy refused.
func (t *tally) successRefused(it *item) {
	t.total.SuccessesRefused++
	t.figures(&it.ev).SuccessesRefused++
}

// refuse counts an event the engine refused as invalid.
func (t *tally) refuse(err error) {
	t.errors++
	msg := err.Error()
	if len(t.examples) < maxExamples && !slices.Contains(t.examples, msg) {
		t.examples = append(t.examples, msg)
	}
}

func (t *tally) result() Result {
	r := Result{Name: t.name, Total: t.total, Unreported: t.unreported, Errors: t.errors, ErrorExamples: t.examples}
	if r.Total.StoppedBy == nil {
		r.Total.StoppedBy = map[string]int64{}
	}
	for name, f := range t.flows {
		ff := FlowFigures{Flow: name, Figures: *f}
		if ff.StoppedBy == nil {
			ff.StoppedBy = map[string]int64{}
		}
		r.Flows = append(r.Flows, ff)
	}
	slices.SortFunc(r.Flows, func(a, b FlowFigures) int { return strings.Compare(a.Flow, b.Flow) })
	r.TopPrefixes = t.prefixes.top(topPrefixes)
	return r
}

// topK counts keys with the Space-Saving algorithm (Metwally et al.): at
// most n counters; a new key past them takes over the least counted one's
// counter, whose count then bounds its error. With at most n distinct keys
// every count is exact.
type topK struct {
	n    int
	m    map[string]*counter
	heap counterHeap // least count first
}

type counter struct {
	key        string
	count, err int64
	idx        int
}

func newTopK(n int) *topK { return &topK{n: n, m: map[string]*counter{}} }

func (t *topK) add(key string) {
	if c, ok := t.m[key]; ok {
		c.count++
		heap.Fix(&t.heap, c.idx)
		return
	}
	if len(t.heap) < t.n {
		c := &counter{key: key, count: 1}
		t.m[key] = c
		heap.Push(&t.heap, c)
		return
	}
	c := t.heap[0]
	delete(t.m, c.key)
	c.key, c.err = key, c.count
	c.count++
	t.m[key] = c
	heap.Fix(&t.heap, 0)
}

// top returns the k most counted keys, most first (ties by key).
func (t *topK) top(k int) []PrefixCount {
	cs := slices.Clone(t.heap)
	slices.SortFunc(cs, func(a, b *counter) int {
		if a.count != b.count {
			if a.count > b.count {
				return -1
			}
			return 1
		}
		return strings.Compare(a.key, b.key)
	})
	out := []PrefixCount{}
	for _, c := range cs[:min(k, len(cs))] {
		p := c.key
		if len(p) > 8 {
			p = p[:8]
		}
		out = append(out, PrefixCount{Prefix: p, Refused: c.count, Approximate: c.err > 0})
	}
	return out
}

type counterHeap []*counter

func (h counterHeap) Len() int { return len(h) }
func (h counterHeap) Less(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count < h[j].count
	}
	return h[i].key < h[j].key
}
func (h counterHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *counterHeap) Push(x any) {
	c := x.(*counter)
	c.idx = len(*h)
	*h = append(*h, c)
}
func (h *counterHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// columns are the baseline (when there is one) and the candidates.
func (r *Report) columns() []Result {
	var cols []Result
	if r.Baseline != nil {
		cols = append(cols, *r.Baseline)
	}
	return append(cols, r.Candidates...)
}

// WriteText writes r as a table with a column per policy (the original
// answers first, when recorded) and a row per figure: the totals, then
// each flow's when there are several, then the prefixes with the most
// refused attempts.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	timeFmt := "2006-01-02 15:04"
	fmt.Fprintf(&b, "replay: %d events from %d input(s), %s to %s UTC\n", r.Events, len(r.Inputs), r.From.Format(timeFmt), r.To.Format(timeFmt))
	fmt.Fprintf(&b, "attempts: %d, %d by real users, %d by others", r.Attempts, r.RealAttempts, r.Attempts-r.RealAttempts)
	if r.Sends > 0 {
		fmt.Fprintf(&b, "; %d sends not replayed", r.Sends)
	}
	if r.Skipped > 0 {
		fmt.Fprintf(&b, "; %d bad lines skipped", r.Skipped)
	}
	if r.NotLogins > 0 {
		fmt.Fprintf(&b, "; %d events that are not logins read past", r.NotLogins)
	}
	b.WriteString("\n")
	for _, e := range r.SkippedExamples {
		fmt.Fprintf(&b, "  skipped: %s\n", e)
	}
	b.WriteString("\n")

	cols := r.columns()
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row := func(label string, cell func(c *Result) string) {
		fmt.Fprint(tw, label)
		for i := range cols {
			fmt.Fprintf(tw, "\t%s", cell(&cols[i]))
		}
		fmt.Fprintln(tw)
	}
	row("", func(c *Result) string { return c.Name })
	figureRows(row, "", func(c *Result) *Figures { return &c.Total }, cols)
	var flows []string
	for _, c := range cols {
		for _, f := range c.Flows {
			if !slices.Contains(flows, f.Flow) {
				flows = append(flows, f.Flow)
			}
		}
	}
	slices.Sort(flows)
	if len(flows) > 1 {
		for _, name := range flows {
			row("", func(*Result) string { return "" })
			row("flow "+name, func(*Result) string { return "" })
			figureRows(row, "  ", func(c *Result) *Figures {
				for i := range c.Flows {
					if c.Flows[i].Flow == name {
						return &c.Flows[i].Figures
					}
				}
				return &Figures{}
			}, cols)
		}
	}
	if anyOf(cols, func(c *Result) bool { return c.Unreported > 0 }) {
		row("proceeded, no outcome recorded", func(c *Result) string { return fmt.Sprint(c.Unreported) })
	}
	if anyOf(cols, func(c *Result) bool { return c.Errors > 0 }) {
		row("events refused as invalid", func(c *Result) string { return fmt.Sprint(c.Errors) })
	}
	tw.Flush()

	b.WriteString("\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	row("most refused prefixes", func(c *Result) string { return c.Name })
	for i := range topPrefixes {
		if !anyOf(cols, func(c *Result) bool { return i < len(c.TopPrefixes) }) {
			break
		}
		row(fmt.Sprintf("  %d", i+1), func(c *Result) string {
			if i >= len(c.TopPrefixes) {
				return "-"
			}
			p := c.TopPrefixes[i]
			approx := ""
			if p.Approximate {
				approx = "<="
			}
			return fmt.Sprintf("%s %s%d", p.Prefix, approx, p.Refused)
		})
	}
	tw.Flush()
	for _, c := range cols {
		for _, e := range c.ErrorExamples {
			fmt.Fprintf(&b, "%s: refused as invalid: %s\n", c.Name, e)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// figureRows writes the rows of one set of figures.
func figureRows(row func(string, func(*Result) string), indent string, fig func(*Result) *Figures, cols []Result) {
	delay := func(c *Result, ms int64) string {
		if c.DelayUnknown {
			return "?"
		}
		return formatMS(ms)
	}
	row(indent+"real users' attempts", func(c *Result) string { return fmt.Sprint(fig(c).RealAttempts) })
	row(indent+"  delayed", func(c *Result) string { return fmt.Sprint(fig(c).RealDelayed) })
	row(indent+"  challenged", func(c *Result) string { return fmt.Sprint(fig(c).RealChallenged) })
	row(indent+"  delay in total", func(c *Result) string { return delay(c, fig(c).RealDelayMS) })
	row(indent+"  longest delay", func(c *Result) string { return delay(c, fig(c).RealDelayMaxMS) })
	row(indent+"  successes refused", func(c *Result) string { return fmt.Sprint(fig(c).SuccessesRefused) })
	row(indent+"other attempts", func(c *Result) string { return fmt.Sprint(fig(c).OtherAttempts) })
	row(indent+"  stopped", func(c *Result) string {
		f := fig(c)
		if f.OtherAttempts == 0 {
			return "0"
		}
		return fmt.Sprintf("%d (%.1f%%)", f.OtherStopped, 100*float64(f.OtherStopped)/float64(f.OtherAttempts))
	})
	var reasons []string
	for i := range cols {
		for r := range fig(&cols[i]).StoppedBy {
			if !slices.Contains(reasons, r) {
				reasons = append(reasons, r)
			}
		}
	}
	slices.Sort(reasons)
	for _, reason := range reasons {
		row(indent+"    by "+reason, func(c *Result) string { return fmt.Sprint(fig(c).StoppedBy[reason]) })
	}
}

func anyOf(cols []Result, f func(*Result) bool) bool {
	for i := range cols {
		if f(&cols[i]) {
			return true
		}
	}
	return false
}

// formatMS writes a delay: "0", "250ms", "1h2m3s" (whole seconds from a
// second up).
func formatMS(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d == 0:
		return "0"
	case d < time.Second:
		return d.String()
	}
	return config.FormatDuration(d.Round(time.Second))
}

// WriteJSON writes r as one indented JSON object.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
