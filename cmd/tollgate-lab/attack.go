package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tollgate-auth/tollgate/internal/cliargs"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/attack"
)

const attackUsage = `usage: tollgate-lab attack [-config FILE] [-objective NAME] [-budget N | -seconds S]
                       [-seed N] [-workers N] [-bound X] [-stop-when-beaten]
                       [-out PATH] [-json] [-svg FILE] [-list]

Searches for the strategy that beats a bound of the policy: a seeded
evolutionary search with random restarts over what the simulator's
attackers can do, every strategy a simulator run on a virtual clock. Prints
the best score of each objective against its bound, and the best strategy
of any objective beaten as a scenario file that reproduces it
(tollgate-lab simulate [-config FILE] on it gives the same score).

  -config FILE     a tollgate config file: its flows are the policy attacked
                   (default: the built-in policy)
  -objective NAME  one objective, or all (the default); -list lists them
  -budget N        strategies evaluated per objective (default 200)
  -seconds S       stop each objective's search after S seconds instead
                   (the result then depends on the machine's speed)
  -seed N          the search's seed (default 1): the same seed, budget and
                   policy find the same strategy, on any number of workers
  -workers N       strategies evaluated at once (default GOMAXPROCS)
  -bound X         judge against X instead of the policy's own bound (one
                   objective only): a claim to test a policy against
  -stop-when-beaten
                   end an objective's search after the batch of strategies
                   in which one beats the bound
  -out PATH        write each objective's best strategy: to PATH for one
                   objective, else to PATH/NAME.yaml
  -json            print one JSON object per objective instead of a table
  -svg FILE        write the search's progress as an SVG chart (one objective)
  -list            print the objectives and their bounds, and exit

Exit status: 0 when every bound holds against the best strategy found, 1
when a strategy beats one, 2 on a usage or config error.
`

// attackJSON is one line of attack -json.
type attackJSON struct {
	attack.Objective
	Best        float64   `json:"best"`
	Beaten      bool      `json:"beaten"`
	AboveNIST   bool      `json:"above_nist,omitempty"`
	Evaluations int       `json:"evaluations"`
	Seed        int64     `json:"seed"`
	Scenario    string    `json:"scenario"`
	Progress    []float64 `json:"progress"`
}

// attackCmd runs `tollgate-lab attack`.
func attackCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tollgate-lab attack", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, attackUsage) }
	configFile := fs.String("config", "", "policy file")
	objective := fs.String("objective", "all", "objective")
	budget := fs.Int("budget", 0, "strategies per objective")
	seconds := fs.Float64("seconds", 0, "seconds per objective")
	seed := fs.Int64("seed", 1, "seed")
	workers := fs.Int("workers", 0, "workers")
	bound := fs.Float64("bound", 0, "bound to judge against")
	out := fs.String("out", "", "where to write the scenarios")
	asJSON := fs.Bool("json", false, "print JSON")
	svgFile := fs.String("svg", "", "SVG chart file")
	list := fs.Bool("list", false, "list the objectives")
	stopWhenBeaten := fs.Bool("stop-when-beaten", false, "stop at the first batch that beats the bound")
	rest, err := cliargs.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	usageErr := func(format string, args ...any) int {
		fmt.Fprintf(stderr, "tollgate-lab attack: "+format+"\n\n%s", append(args, attackUsage)...)
		return 2
	}
	switch {
	case len(rest) > 0:
		return usageErr("unexpected argument %q", rest[0])
	case *budget < 0 || *seconds < 0 || *workers < 0 || *bound < 0:
		return usageErr("-budget, -seconds, -workers and -bound cannot be negative")
	case *budget > 0 && *seconds > 0:
		return usageErr("set -budget or -seconds, not both")
	case (*svgFile != "" || *bound > 0) && *objective == "all":
		return usageErr("-svg and -bound take one -objective")
	}

	policy := config.DefaultPolicy()
	if *configFile != "" {
		cfg, err := config.Load(*configFile, func(string) string { return "" })
		if err != nil {
			fmt.Fprintf(stderr, "tollgate-lab attack: %v\n", err)
			return 2
		}
		policy = cfg.Policy
	}
	objectives := attack.Objectives(policy)
	if *list {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "objective\tbound\tunit\twhat")
		for _, o := range objectives {
			fmt.Fprintf(tw, "%s\t%g\t%s\t%s\n", o.Name, o.Bound, o.Unit, o.Summary)
		}
		tw.Flush()
		return 0
	}
	var names []string
	for _, o := range objectives {
		if *objective == "all" || o.Name == *objective {
			names = append(names, o.Name)
		}
	}
	if len(names) == 0 {
		var all []string
		for _, o := range objectives {
			all = append(all, o.Name)
		}
		return usageErr("unknown objective %q (the policy has %s)", *objective, strings.Join(all, ", "))
	}
	if *out != "" && len(names) > 1 {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(stderr, "tollgate-lab attack: %v\n", err)
			return 2
		}
	}

	n := *budget
	if *seconds > 0 {
		n = 1 << 30
	}
	status := 0
	var results []attack.Result
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	if !*asJSON {
		fmt.Fprintln(tw, "objective\tbest\tbound\tunit\tverdict\tstrategies")
	}
	for _, name := range names {
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if *seconds > 0 {
			sctx, cancel = context.WithTimeout(ctx, time.Duration(*seconds*float64(time.Second)))
		}
		r, err := attack.Search(sctx, attack.Config{Objective: name, Policy: policy, Budget: n, Seed: *seed, Workers: *workers, Bound: *bound,
			StopWhenBeaten: *stopWhenBeaten})
		cancel()
		if err != nil && !(errors.Is(err, context.DeadlineExceeded) && *seconds > 0 && r.Evaluations > 0) {
			fmt.Fprintf(stderr, "tollgate-lab attack: %s: %v\n", name, err)
			return 2
		}
		results = append(results, r)
		if r.Beaten {
			status = 1
		}
		if *asJSON {
			writeJSONLine(stdout, attackJSON{Objective: r.Objective, Best: r.Best, Beaten: r.Beaten, AboveNIST: aboveNIST(r),
				Evaluations: r.Evaluations, Seed: *seed, Scenario: string(r.Scenario), Progress: r.Progress})
		} else {
			verdict := "holds"
			if r.Beaten {
				verdict = "BEATEN"
			}
			if aboveNIST(r) {
				verdict += " (above NIST SP 800-63B's 100)"
			}
			fmt.Fprintf(tw, "%s\t%g\t%g\t%s\t%s\t%d\n", name, r.Best, r.Objective.Bound, r.Objective.Unit, verdict, r.Evaluations)
		}
		if *out != "" {
			path := *out
			if len(names) > 1 {
				path = filepath.Join(*out, name+".yaml")
			}
			if err := os.WriteFile(path, r.Scenario, 0o644); err != nil {
				fmt.Fprintf(stderr, "tollgate-lab attack: %v\n", err)
				return 2
			}
		}
		if *svgFile != "" {
			if err := os.WriteFile(*svgFile, attack.SVG(r), 0o644); err != nil {
				fmt.Fprintf(stderr, "tollgate-lab attack: %v\n", err)
				return 2
			}
		}
	}
	if !*asJSON {
		tw.Flush()
		if *out == "" {
			for _, r := range results {
				if r.Beaten {
					fmt.Fprintf(stdout, "\n--- %s: the strategy that beats the bound ---\n%s", r.Objective.Name, r.Scenario)
				}
			}
		}
	}
	return status
}

// aboveNIST reports whether a failures objective's best is above NIST SP
// 800-63B's 100 failed attempts.
func aboveNIST(r attack.Result) bool {
	return r.Objective.Unit == "failures/24h" && r.Best > attack.NISTMaxFailures
}

func writeJSONLine(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(w, "%s\n", b)
}
