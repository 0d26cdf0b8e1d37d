// Command tollgate is the tollgate server and its operators' tools; the
// tools that study a policy (simulate, attack, replay, conformance) are
// cmd/tollgate-lab and the load tool cmd/tollgate-bench, outside this binary.
//
//	tollgate [serve] [-config FILE] [-strict-store]
//	                                   run the service (the default)
//	tollgate validate-config [-strict] [-json | -print] [FILE]
//	                                   check a config file (or the built-in
//	                                   policy) without starting
//	tollgate admin explain|reset ...   call the admin API
//	tollgate token -key FILE -tenant T print a bearer token for calling tollgate
//	tollgate version                   print the version
//	tollgate healthcheck [URL]         probe /healthz (for images without a shell)
//	tollgate migrate-key-layout        copy a Cluster's keys to subject hash tags
//
// The configuration is a YAML file (-config, or the TOLLGATE_CONFIG
// variable) laid over built-in defaults, and TOLLGATE_LISTEN,
// TOLLGATE_SECRET and TOLLGATE_LOG_LEVEL laid over the file.
// tollgate.example.yaml shows every key with its default.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
	"github.com/tollgate-auth/tollgate/internal/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

const commandUsage = `usage:
  tollgate [serve] [-config FILE] [-strict-store]
                                     run the service (the default); -strict-store
                                     refuses a Redis that may evict keys, keeps
                                     no persistence, or answers without a
                                     password off loopback (docs/redis.md)
  tollgate validate-config [-strict] [-json | -print] [FILE]
                                     check a config file (without FILE, the
                                     built-in policy) without starting; -strict
                                     fails on warnings and on a flow above NIST
                                     SP 800-63B's 100 (validate-config -h)
  tollgate version                   print the version, commit and Go version
  tollgate healthcheck [URL]         exit 0 when URL (default /healthz on
                                     TOLLGATE_LISTEN's port) answers 200
  tollgate admin explain|reset -flow F -subject KIND [flags] < IDENTIFIER
                                     call the admin API (admin -h)
  tollgate token -key FILE -tenant T [flags]
                                     print a bearer token for calling tollgate
                                     (token -h)
  tollgate migrate-key-layout [-config FILE] [-remove-old]
                                     copy a Redis Cluster's keys to their subject
                                     hash tags' names (migrate-key-layout -h)

The tools that study a policy (simulate, attack, replay, conformance) are
tollgate-lab's, a binary of their own: tollgate-lab help.
`

// labCommands are tollgate-lab's commands, once this binary's: naming one
// here says where it went.
var labCommands = map[string]bool{"simulate": true, "attack": true, "replay": true, "conformance": true}

// run runs one command and returns the exit status. ctx is cancelled by
// SIGTERM or SIGINT.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cmd := "serve"
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serveCmd(ctx, args, stderr, getenv)
	case "validate-config":
		return validateCmd(args, stdout, stderr)
	case "token":
		return tokenCmd(args, stdout, stderr, time.Now)
	case "admin":
		return adminCmd(args, os.Stdin, stdout, stderr, getenv)
	case "healthcheck":
		return healthcheckCmd(ctx, args, stderr, getenv)
	case "migrate-key-layout":
		return migrateCmd(ctx, args, stdout, stderr, getenv)
	case "version":
		printVersion(stdout)
		return 0
	case "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		if labCommands[cmd] {
			fmt.Fprintf(stderr, "tollgate: %s is tollgate-lab's command: tollgate-lab %s\n", cmd, cmd)
			return 2
		}
		fmt.Fprintf(stderr, "tollgate: unknown command %q\n%s", cmd, usage)
		return 2
	}
}

func serveCmd(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) int {
	fs := flag.NewFlagSet("tollgate serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	configFile := fs.String("config", "", "config `FILE` (default $TOLLGATE_CONFIG)")
	strictStore := fs.Bool("strict-store", false, "refuse a Redis that may evict keys, keeps no persistence, or answers without a password off loopback")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tollgate serve: unexpected argument %q\n%s", fs.Arg(0), usage)
		return 2
	}
	path := *configFile
	if path == "" {
		path = getenv("TOLLGATE_CONFIG")
	}
	cfg, err := config.Load(path, getenv)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate: bad configuration: %v\n", err)
		return 1
	}
	cfg.StrictStore = *strictStore
	load := func() (*config.Config, error) { return config.Load(path, getenv) }
	if err := serve(ctx, cfg, stderr, nil, load); err != nil {
		fmt.Fprintf(stderr, "tollgate: %v\n", err)
		return 1
	}
	return 0
}

// printFlow writes flow f of policy p as it takes effect: its settings,
// its worst case, and one line per rule, in the order the rules are
// walked.
func printFlow(w io.Writer, p *authguard.Policy, f *authguard.Flow) {
	retry := ""
	if f.FailMode == authguard.FailClosed {
		retry = fmt.Sprintf(" (delay %s)", dur(f.FailClosedRetry))
	}
	grouping := f.Grouping.IPv6Bits
	if grouping == 0 {
		grouping = 64
	}
	requires := strings.Join(f.Requires(), ", ")
	if requires == "" {
		requires = "nothing"
	}
	devices := ", " + tokensPhrase(f)
	if f.KnownNetworksOff {
		devices += ", known networks off"
	}
	devices += revocationPhrase(p, f)
	fmt.Fprintf(w, "flow %s: %s, fails %s%s, IPv6 per /%d, %d allow-listed ranges%s, requires %s\n",
		f.Name, f.Mode, f.FailMode, retry, grouping, f.AllowList.Len(), devices, requires)
	fmt.Fprintf(w, "  %s\n", budgetLine(f))
	if line := stepUpLine(f); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
	if line := successClearsLine(f); line != "" {
		fmt.Fprintf(w, "  %s\n", line)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  RULE\tKEY\tSUBJECT\tALGORITHM\tCOUNTS\tPAST\tCLIENTS\tREASON\tLIMIT")
	for _, r := range f.Rules {
		limit := r.Describe(dur) // the algorithm table's description
		switch {
		case r.PriceCost:
			limit += "; a send costs its price"
		case r.Cost != 1:
			limit += fmt.Sprintf("; a call costs %d", r.Cost)
		}
		if r.Breached {
			limit += "; failures reported breached only"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			r.Name, r.Key, r.Subject, r.Algorithm, r.Counts, r.Past, r.Clients, r.Reason, limit)
	}
	if len(f.Rules) == 0 {
		fmt.Fprintln(tw, "  (no rules: every call proceeds)")
	}
	tw.Flush()
}

// revocationPhrase says on -print's flow line whether a password change
// revokes the device tokens f trusts: for a flow with a device rule only
// when it does (its own revoke_devices_on_password_change, off by
// default); for a send flow, which may not state it and follows its trust
// group, always, with the flow whose setting it follows, so that the send
// flow's line is not read as off while login's setting revokes.
func revocationPhrase(p *authguard.Policy, f *authguard.Flow) string {
	on, from := p.DeviceRevocation(f)
	switch {
	case f.Kind != authguard.Sends && on:
		return ", a password change revokes its device tokens"
	case f.Kind != authguard.Sends || from == "":
		return ""
	case on:
		return fmt.Sprintf(", device tokens of %q: a password change revokes them (flow %s's revoke_devices_on_password_change)", f.DeviceTrust, from)
	}
	return fmt.Sprintf(", device tokens of %q: a password change leaves them valid (flow %s's revoke_devices_on_password_change)", f.DeviceTrust, from)
}

// stepUpLine says when a flow's success is answered step_up, or that the
// flow is a step-up flow; "" for neither.
func stepUpLine(f *authguard.Flow) string {
	if f.SecondFactor {
		return "step-up flow: each check charges its try (an attempt token); reports take step_up_passed or step_up_failed with a ticket and that token"
	}
	su := f.StepUp
	if su.Flow == "" {
		return ""
	}
	var when []string
	if !su.BreachedOff {
		when = append(when, "breached password")
	}
	if su.UnderAttackFailures > 0 {
		when = append(when, fmt.Sprintf("%d account failures", su.UnderAttackFailures))
	}
	if su.NewDeviceFailures > 0 {
		when = append(when, fmt.Sprintf("new device and network with %d account failures", su.NewDeviceFailures))
	}
	if !su.EscalatedOff {
		when = append(when, "escalated address")
	}
	if len(when) == 0 {
		when = append(when, "never")
	}
	return fmt.Sprintf("step_up (flow %s, ticket %s): %s; a valid device token exempts from all but the address", su.Flow, dur(su.TTL), strings.Join(when, ", "))
}

// dur writes a duration as a config file would.
func dur(d time.Duration) string { return config.FormatDuration(d) }
