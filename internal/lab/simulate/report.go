package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteText writes r as a table with a row per actor, then each expectation
// with ok or FAIL and the value it was compared with. The denied column
// appears only when a send was denied, and the mint_logins and
// mint_refused columns only when an actor minted device tokens, and the
// delay_seconds column only when an actor was delayed, and the spent
// column only when a send actor's codes cost something; likewise the
// captcha_solved, reports_refused and own_logins and own_refused columns
// only when an actor solved a CAPTCHA, had a report refused or logged in
// to its own account.
func WriteText(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario: %s (%s simulated)\n\n", r.Scenario, r.Duration)
	mints, denied, delays, spent := false, false, false, false
	solved, refused, own := false, false, false
	for _, a := range r.Actors {
		solved = solved || a.CaptchaSolved > 0
		refused = refused || a.ReportsRefused > 0
		own = own || a.OwnLogins > 0
		mints = mints || a.MintLogins > 0
		denied = denied || a.Denied > 0
		delays = delays || a.DelaySeconds > 0
		spent = spent || a.Spent > 0
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "actor\tattempts\tproceeded\tdelayed\tcaptcha")
	if denied {
		fmt.Fprint(tw, "\tdenied")
	}
	fmt.Fprint(tw, "\tfirst_delay_at\tfirst_captcha_at\taccounts_checked\taccounts_checked_before_captcha"+
		"\tproceeded_max_24h\tfailures_max_24h")
	if delays {
		fmt.Fprint(tw, "\tdelay_seconds")
	}
	if mints {
		fmt.Fprint(tw, "\tmint_logins\tmint_refused")
	}
	if spent {
		fmt.Fprint(tw, "\tspent")
	}
	if solved {
		fmt.Fprint(tw, "\tcaptcha_solved")
	}
	if refused {
		fmt.Fprint(tw, "\treports_refused")
	}
	if own {
		fmt.Fprint(tw, "\town_logins\town_refused")
	}
	fmt.Fprintln(tw)
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	for _, a := range r.Actors {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d", a.Name, a.Attempts, a.Proceeded, a.Delayed, a.Captcha)
		if denied {
			fmt.Fprintf(tw, "\t%d", a.Denied)
		}
		fmt.Fprintf(tw, "\t%s\t%s\t%d\t%d\t%d\t%d", dash(a.FirstDelayAt), dash(a.FirstCaptchaAt), a.AccountsChecked, a.AccountsCheckedBeforeCaptcha,
			a.ProceededMax24h, a.FailuresMax24h)
		if delays {
			fmt.Fprintf(tw, "\t%d", a.DelaySeconds)
		}
		if mints {
			fmt.Fprintf(tw, "\t%d\t%d", a.MintLogins, a.MintRefused)
		}
		if spent {
			fmt.Fprintf(tw, "\t%d", a.Spent)
		}
		if solved {
			fmt.Fprintf(tw, "\t%d", a.CaptchaSolved)
		}
		if refused {
			fmt.Fprintf(tw, "\t%d", a.ReportsRefused)
		}
		if own {
			fmt.Fprintf(tw, "\t%d\t%d", a.OwnLogins, a.OwnRefused)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	if len(r.Expectations) > 0 {
		b.WriteString("\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, e := range r.Expectations {
			status := "ok"
			if !e.OK {
				status = "FAIL"
			}
			fmt.Fprintf(tw, "%s\t%s\t(got %d)\n", status, e.Expr, e.got)
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes r as one JSON object on one line.
func WriteJSON(w io.Writer, r *Result) error {
	return json.NewEncoder(w).Encode(r)
}
