package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tollgate-auth/tollgate/internal/cliargs"
	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/replay"
)

const replayUsage = `usage: tollgate-lab replay -config FILE [-config FILE ...] [flags] LOG...

Replays recorded logins through each candidate policy on a virtual clock and
prints, side by side, whom each would have slowed (real users: attempts whose
account succeeds within 7 days from the same device or IP prefix) and what it
would have stopped. Flags may come before or after the logs; several logs are
merged by time.

  -config FILE   a tollgate config file whose flows are a candidate (named by
                 the file's base name); "builtin" is the built-in policy.
                 Repeat it to compare; the default is builtin alone
  -format F      tollgate (its decision log, the default), keycloak (login
                 events) or csv
  -csv MAPPING   the CSV's columns, e.g. time=ts,account=user,ip=client_ip,outcome=result
  -skip-bad      skip and count lines that cannot be read, instead of stopping
  -json          print the report as JSON instead of a table
  -svg FILE      also write a bar chart of the report

Keycloak and CSV identifiers are hashed on read with a random key made for
this run; nothing identifying is written anywhere. Progress goes to stderr.

Exit status: 0 when the report is printed, 1 when a log cannot be read, 2 on
a usage or config error.
`

// stringsFlag is a flag that may be repeated.
type stringsFlag []string

func (s *stringsFlag) String() string     { return strings.Join(*s, ",") }
func (s *stringsFlag) Set(v string) error { *s = append(*s, v); return nil }

// replayCmd runs `tollgate-lab replay` with args (the words after "replay").
func replayCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tollgate-lab replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, replayUsage) }
	var configs stringsFlag
	fs.Var(&configs, "config", "candidate policy `FILE` (repeatable)")
	format := fs.String("format", "tollgate", "input format")
	mapping := fs.String("csv", "", "CSV column mapping")
	skipBad := fs.Bool("skip-bad", false, "skip unreadable lines")
	jsonOut := fs.Bool("json", false, "print JSON")
	svgFile := fs.String("svg", "", "write an SVG chart to FILE")

	// Flags may follow the logs, as for simulate.
	paths, err := cliargs.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2 // the flag package has said why
	}
	if len(paths) == 0 {
		fmt.Fprint(stderr, "tollgate-lab replay: no log given\n\n"+replayUsage)
		return 2
	}
	if slices.Contains(paths, "-") {
		fmt.Fprintln(stderr, "tollgate-lab replay: a log is read twice, so it must be a file, not standard input")
		return 2
	}
	f, err := replay.ParseFormat(*format)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate-lab replay: -format: %v\n", err)
		return 2
	}
	var m replay.Mapping
	switch {
	case f == replay.FormatCSV && *mapping == "":
		fmt.Fprintln(stderr, "tollgate-lab replay: -format csv needs -csv MAPPING (time=ts,account=user,ip=client_ip,outcome=result)")
		return 2
	case f != replay.FormatCSV && *mapping != "":
		fmt.Fprintln(stderr, "tollgate-lab replay: -csv MAPPING goes with -format csv")
		return 2
	case *mapping != "":
		if m, err = replay.ParseMapping(*mapping); err != nil {
			fmt.Fprintf(stderr, "tollgate-lab replay: -csv: %v\n", err)
			return 2
		}
	}
	if len(configs) == 0 {
		configs = stringsFlag{"builtin"}
	}

	cands, err := loadCandidates(configs)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate-lab replay: %v\n", err)
		return 2
	}
	// Keycloak and CSV identifiers are hashed with a key of this run only:
	// equal within the run, unlinkable across runs.
	var key []byte
	if f != replay.FormatTollgate {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			fmt.Fprintf(stderr, "tollgate-lab replay: %v\n", err)
			return 2
		}
	}
	opts := replay.Options{Format: f, Mapping: m, Key: key}
	inputs := make([]replay.Input, len(paths))
	for i, path := range paths {
		inputs[i] = replay.Input{Name: path, Open: func() (replay.Source, error) { return openLog(path, opts) }}
	}
	// A mapping or format error shows before two passes over the logs.
	if src, err := inputs[0].Open(); err != nil {
		fmt.Fprintf(stderr, "tollgate-lab replay: %v\n", err)
		return 2
	} else if c, ok := src.(io.Closer); ok {
		c.Close()
	}

	rep, err := replay.Run(ctx, replay.Config{Candidates: cands, Inputs: inputs, SkipBad: *skipBad, Progress: stderr})
	if err != nil {
		var le *replay.LineError
		if errors.As(err, &le) && !*skipBad {
			fmt.Fprintf(stderr, "tollgate-lab replay: %v (-skip-bad skips such lines)\n", err)
		} else {
			fmt.Fprintf(stderr, "tollgate-lab replay: %v\n", err)
		}
		return 1
	}
	if *jsonOut {
		err = replay.WriteJSON(stdout, &rep)
	} else {
		err = replay.WriteText(stdout, &rep)
	}
	if err == nil && *svgFile != "" {
		err = os.WriteFile(*svgFile, replay.SVG(&rep), 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "tollgate-lab replay: %v\n", err)
		return 1
	}
	return 0
}

// loadCandidates reads each config file's policy (as serve would, without
// the environment), named by the file's base name, or by its path when two
// share one.
func loadCandidates(paths []string) ([]replay.Candidate, error) {
	bases := map[string]int{}
	for _, p := range paths {
		bases[filepath.Base(p)]++
	}
	var cands []replay.Candidate
	for _, p := range paths {
		name := filepath.Base(p)
		if bases[name] > 1 {
			name = p
		}
		if p == "builtin" {
			cands = append(cands, replay.Candidate{Name: name, Policy: config.DefaultPolicy()})
			continue
		}
		cfg, err := config.Load(p, func(string) string { return "" })
		if err != nil {
			return nil, err
		}
		cands = append(cands, replay.Candidate{Name: name, Policy: cfg.Policy})
	}
	return cands, nil
}

// logSource is a log file's Source, closed after each pass.
type logSource struct {
	replay.Source
	f *os.File
}

func (s *logSource) Close() error { return s.f.Close() }

func openLog(path string, opts replay.Options) (replay.Source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	src, err := replay.Open(path, f, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &logSource{Source: src, f: f}, nil
}
