// Package cliargs parses a subcommand's flags wherever they stand among its
// file arguments, as `tollgate-lab simulate` and `tollgate-lab replay` take them.
package cliargs

import "flag"

// Parse parses args with fs, letting flags come before, between or after
// the positional arguments, which it returns in order; everything after a
// "--" is positional. Errors are fs.Parse's (flag.ErrHelp for -h), which
// the flag set has already reported.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var paths []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return paths, nil
		}
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(paths, rest...), nil
		}
		paths, args = append(paths, rest[0]), rest[1:]
	}
}
