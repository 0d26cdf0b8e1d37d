package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

const conformanceUsage = `usage: tollgate-lab conformance [-profile PROFILE] [-config FILE] [-json | -markdown]
       tollgate-lab conformance -profile PROFILE -preset

Prints, requirement by requirement, how the policy meets a standard: the
rule and its numbers, computed from the policy; the evidence (scenarios run
on the policy, the worst case of an adversarial search when one is plugged
in, the tests that hold each promise); and pass or fail. The mapping is
tollgate's reading of each requirement, not the standard's text (docs/policy.md,
"Conformance").

  -profile PROFILE  nist-800-63b-4 or asvs-5.0-l2 (default: both)
  -config FILE      a tollgate config file, as serve reads it without the
                    environment (default: the built-in policy)
  -json             print the reports as JSON
  -markdown         print each report as a Markdown table
  -preset           print the profile's preset: a config that meets it with
                    the least friction for real users

Exit status: 0 when no requirement fails, 1 when one does, 2 when no report
could be made: a usage error, a config file that does not load, a search
that failed.
`

// conformanceSearch makes the adversarial search the report shows as
// evidence, on the configuration checked (the search runs on cfg.Policy);
// nil until one is plugged in, and the report says "not searched".
var conformanceSearch func(cfg *config.Config) conformance.WorstCase

// conformanceCmd runs `tollgate-lab conformance`; search, when not nil, makes
// the WorstCase for the configuration checked.
func conformanceCmd(ctx context.Context, args []string, stdout, stderr io.Writer, search func(*config.Config) conformance.WorstCase) int {
	fs := flag.NewFlagSet("tollgate-lab conformance", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, conformanceUsage) }
	profile := fs.String("profile", "", "the profile: "+strings.Join(conformance.Profiles(), " or "))
	configFile := fs.String("config", "", "config `FILE`")
	asJSON := fs.Bool("json", false, "print JSON")
	asMarkdown := fs.Bool("markdown", false, "print Markdown tables")
	preset := fs.Bool("preset", false, "print the profile's preset")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	profileSet := false
	fs.Visit(func(f *flag.Flag) { profileSet = profileSet || f.Name == "profile" })
	usageError := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tollgate-lab conformance: "+format+"\n\n%s", append(a, conformanceUsage)...)
		return 2
	}
	switch {
	case fs.NArg() > 0:
		return usageError("unexpected argument %q", fs.Arg(0))
	case *asJSON && *asMarkdown:
		return usageError("-json and -markdown exclude each other")
	case profileSet && conformance.Title(*profile) == "":
		return usageError("unknown profile %q (the profiles are %s)", *profile, strings.Join(conformance.Profiles(), ", "))
	case *preset && (*profile == "" || *configFile != "" || *asJSON || *asMarkdown):
		return usageError("-preset takes -profile and nothing else")
	}
	if *preset {
		data, err := conformance.Preset(*profile)
		if err != nil {
			fmt.Fprintf(stderr, "tollgate-lab conformance: %v\n", err)
			return 2
		}
		stdout.Write(data)
		return 0
	}
	// The same file serve reads, without the environment (as
	// validate-config); none is the built-in configuration.
	cfg, err := config.Load(*configFile, func(string) string { return "" })
	if err != nil {
		fmt.Fprintf(stderr, "tollgate-lab conformance: %v\n", err)
		return 2
	}
	opts := conformance.Options{Config: cfg, Source: *configFile}
	if *configFile == "" {
		opts.Source = "built-in"
	}
	if search != nil {
		opts.WorstCase = search(cfg)
	}
	profiles := conformance.Profiles()
	if *profile != "" {
		profiles = []string{*profile}
	}
	var reports []*conformance.Report
	pass := true
	for _, p := range profiles {
		opts.Profile = p
		rep, err := conformance.Run(ctx, opts)
		if err != nil {
			fmt.Fprintf(stderr, "tollgate-lab conformance: %v\n", err)
			return 2
		}
		reports = append(reports, rep)
		pass = pass && rep.Pass
	}
	write := conformance.WriteText
	switch {
	case *asJSON:
		write = conformance.WriteJSON
	case *asMarkdown:
		write = conformance.WriteMarkdown
	}
	if err := write(stdout, reports); err != nil {
		fmt.Fprintf(stderr, "tollgate-lab conformance: %v\n", err)
		return 2
	}
	if !pass {
		for _, rep := range reports {
			for _, r := range rep.Requirements {
				if r.Status == conformance.Fail {
					fmt.Fprintf(stderr, "tollgate-lab conformance: %s %s fails: %s\n", rep.Profile, r.ID, strings.Join(r.Failures, "; "))
				}
			}
		}
		return 1
	}
	return 0
}
