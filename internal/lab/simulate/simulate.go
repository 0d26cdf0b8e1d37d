package simulate

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tollgate-auth/tollgate/internal/cliargs"
	"github.com/tollgate-auth/tollgate/internal/config"
)

const usage = `usage: tollgate-lab simulate [-json] [-svg FILE] [-config FILE] SCENARIO.yaml...

Replays each scenario on the real engine with a virtual clock and checks its
expectations. Flags may come before or after the scenarios.

  -json         print one JSON object per scenario instead of a table
  -svg FILE     write a chart of cumulative proceeded attempts (one scenario only)
  -config FILE  a tollgate config file (as for serve): its flows are laid
                over the built-in policy

Exit status: 0 when every expectation holds, 1 when one fails, 2 on a usage
or scenario error.
`

// Main runs `tollgate-lab simulate` with args (the words after "simulate") and
// returns the exit status: 0 when every expectation holds, 1 when one fails,
// 2 for a usage or scenario error, reported on stderr.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tollgate-lab simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	jsonOut := fs.Bool("json", false, "print JSON")
	svgFile := fs.String("svg", "", "write an SVG chart to FILE")
	configFile := fs.String("config", "", "policy file")

	// Flags may follow the scenarios: parse, take one positional word, and
	// parse again until nothing is left. After "--" every word is a path.
	paths, err := cliargs.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2 // the flag package has said why
	}
	if len(paths) == 0 {
		fmt.Fprint(stderr, "tollgate-lab simulate: no scenario given\n\n"+usage)
		return 2
	}
	if *svgFile != "" && len(paths) > 1 {
		fmt.Fprintln(stderr, "tollgate-lab simulate: -svg takes exactly one scenario")
		return 2
	}

	policy := config.DefaultPolicy()
	if *configFile != "" {
		// The same file `tollgate serve -config` reads: its flows are the
		// policy; the environment is ignored.
		cfg, err := config.Load(*configFile, func(string) string { return "" })
		if err != nil {
			fmt.Fprintf(stderr, "tollgate-lab simulate: %v\n", err)
			return 2
		}
		policy = cfg.Policy
	}

	scenarios := make([]*Scenario, len(paths))
	for i, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "tollgate-lab simulate: %v\n", err)
			return 2
		}
		if scenarios[i], err = ParseScenario(path, data); err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
	}

	status := 0
	for i, sc := range scenarios {
		r, err := Run(sc, policy)
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 2
		}
		if *jsonOut {
			err = WriteJSON(stdout, r)
		} else {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			err = WriteText(stdout, r)
		}
		if err != nil {
			fmt.Fprintf(stderr, "tollgate-lab simulate: %v\n", err)
			return 2
		}
		if *svgFile != "" {
			if err := os.WriteFile(*svgFile, SVG(r), 0o644); err != nil {
				fmt.Fprintf(stderr, "tollgate-lab simulate: %v\n", err)
				return 2
			}
		}
		if !r.Passed() {
			status = 1
		}
	}
	return status
}
