// Command tollgate is the tollgate server and its tools.
//
//	tollgate [serve]                   run the service (the default)
//	tollgate simulate SCENARIO.yaml    replay a scenario on a virtual clock
//	tollgate validate-config FILE      check a config file without starting
//	tollgate version                   print the version
package main

import (
	"fmt"
	"os"

	"github.com/tollgate-auth/tollgate/internal/simulate"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "simulate":
		return simulate.Main(args, os.Stdout, os.Stderr)
	default:
		fmt.Fprintf(os.Stderr, "tollgate: unknown command %q (serve, simulate, validate-config, version)\n", cmd)
		return 2
	}
}
