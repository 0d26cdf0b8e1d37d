package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// Output is `tollgate-lab conformance -json`'s output: the reports, one per
// profile, and whether every one passed.
type Output struct {
	Pass    bool      `json:"pass"`
	Reports []*Report `json:"reports"`
}

// WriteJSON writes the reports as one indented JSON Output.
func WriteJSON(w io.Writer, reports []*Report) error {
	out := Output{Pass: true, Reports: reports}
	for _, r := range reports {
		out.Pass = out.Pass && r.Pass
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// verdict says a report's outcome in a word.
func verdict(pass bool) string {
	if pass {
		return "pass"
	}
	return "FAIL"
}

// statusWord is a result's status as the text report prints it, failures in
// capitals so that they stand out.
func statusWord(s Status) string {
	if s == Fail {
		return "FAIL"
	}
	return string(s)
}

// evidenceLine says one piece of evidence in words.
func evidenceLine(e Evidence) string {
	var b strings.Builder
	b.WriteString(e.Kind + " " + e.Name)
	if e.Flow != "" {
		b.WriteString(" on " + e.Flow)
	}
	if e.Value != nil && e.Bound != nil {
		held := "held"
		if e.Held != nil && !*e.Held {
			held = "PAST THE BOUND"
		}
		fmt.Fprintf(&b, ": %s (bound %s, %s)", fmtScore(*e.Value), fmtScore(*e.Bound), held)
	}
	if e.Note != "" {
		b.WriteString(": " + e.Note)
	}
	return b.String()
}

// WriteText writes the reports for a terminal: per requirement its status,
// id and summary, then how, what fails, what the caller does and the
// evidence, tests on one line.
func WriteText(w io.Writer, reports []*Report) error {
	var b strings.Builder
	for i, rep := range reports {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s (%s), policy %s: %s\n", rep.Title, rep.Profile, rep.Policy, verdict(rep.Pass))
		fmt.Fprintf(&b, "%s\n", rep.Reading)
		for _, r := range rep.Requirements {
			fmt.Fprintf(&b, "\n%-6s %s  %s\n", statusWord(r.Status), r.ID, r.Summary)
			for _, f := range r.Failures {
				fmt.Fprintf(&b, "  fails:    %s\n", f)
			}
			for _, h := range r.How {
				fmt.Fprintf(&b, "  how:      %s\n", h)
			}
			if r.Caller != "" {
				fmt.Fprintf(&b, "  caller:   %s\n", r.Caller)
			}
			var testNames []string
			for _, e := range r.Evidence {
				if e.Kind == EvidenceTest {
					testNames = append(testNames, e.Name)
					continue
				}
				fmt.Fprintf(&b, "  evidence: %s\n", evidenceLine(e))
			}
			if len(testNames) > 0 {
				fmt.Fprintf(&b, "  tests:    %s\n", strings.Join(testNames, ", "))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes each report as a Markdown table: one row per
// requirement, with its status, how, and evidence.
func WriteMarkdown(w io.Writer, reports []*Report) error {
	var b strings.Builder
	for i, rep := range reports {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "## %s (`%s`): %s\n\n", rep.Title, rep.Profile, verdict(rep.Pass))
		fmt.Fprintf(&b, "Policy: %s. %s\n\n", cell(rep.Policy), rep.Reading)
		b.WriteString("| requirement | status | how the policy meets it | evidence |\n|---|---|---|---|\n")
		for _, r := range rep.Requirements {
			var how []string
			for _, f := range r.Failures {
				how = append(how, "**fails:** "+cell(f))
			}
			for _, h := range r.How {
				how = append(how, cell(h))
			}
			if r.Caller != "" {
				how = append(how, "**caller:** "+cell(r.Caller))
			}
			var ev []string
			for _, e := range r.Evidence {
				if e.Kind == EvidenceTest {
					ev = append(ev, "`"+cell(e.Name)+"`")
				} else {
					ev = append(ev, cell(evidenceLine(e)))
				}
			}
			fmt.Fprintf(&b, "| **%s** %s | %s | %s | %s |\n", cell(r.ID), cell(r.Summary), statusWord(r.Status),
				strings.Join(how, "<br>"), strings.Join(ev, "<br>"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell makes text safe in a Markdown table cell: no pipe ends the cell and
// no newline ends the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	s = strings.ReplaceAll(s, "\r", " ")
	return strings.ReplaceAll(s, "\n", " ")
}
