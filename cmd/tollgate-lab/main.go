// Command tollgate-lab is tollgate's laboratory: the tools that study a
// policy rather than serve it, kept out of the server binary (cmd/tollgate)
// as the load tool is (cmd/tollgate-bench).
//
//	tollgate-lab simulate SCENARIO.yaml    replay a scenario on a virtual clock
//	tollgate-lab attack [-objective NAME]  search for the strategy that beats a
//	                                       bound of the policy
//	tollgate-lab replay -config FILE LOG...
//	                                       replay recorded logins through policies
//	tollgate-lab conformance [-profile P]  map a policy to NIST SP 800-63B-4 and
//	                                       OWASP ASVS 5.0 L2
//
// Each reads a config file as `tollgate serve` does, without the
// environment; `tollgate-lab COMMAND -h` prints a command's flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tollgate-auth/tollgate/internal/lab/simulate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

const usage = `usage:
  tollgate-lab simulate [-config FILE] SCENARIO.yaml...
                                     replay a scenario on a virtual clock and
                                     check its expectations (simulate -h)
  tollgate-lab attack [-objective NAME] [-budget N] [-config FILE]
                                     search for the strategy that beats a
                                     bound of the policy (attack -h)
  tollgate-lab replay -config FILE [-config FILE...] LOG...
                                     whom would each policy have slowed, and
                                     what stopped, in recorded logins (replay -h)
  tollgate-lab conformance [-profile P] [-config FILE] [-json | -markdown]
                                     how the policy meets NIST SP 800-63B-4
                                     and OWASP ASVS 5.0 L2, requirement by
                                     requirement; -preset prints a profile's
                                     preset config (conformance -h)

The server and its operators' commands (serve, validate-config, admin,
token, healthcheck, version) are tollgate's: tollgate help.
`

// run runs one command and returns the exit status. ctx is cancelled by
// SIGTERM or SIGINT.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	switch cmd {
	case "simulate":
		return simulate.Main(args, stdout, stderr)
	case "attack":
		return attackCmd(ctx, args, stdout, stderr)
	case "replay":
		return replayCmd(ctx, args, stdout, stderr)
	case "conformance":
		return conformanceCmd(ctx, args, stdout, stderr, conformanceSearch)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "tollgate-lab: unknown command %q\n%s", cmd, usage)
		return 2
	}
}
