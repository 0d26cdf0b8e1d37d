package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

const heldUsage = `usage: tollgate admin held list [-flow FLOW] [-subject account|ip] [-cursor C] [-limit N]
       tollgate admin held reset -flow FLOW [-subject account|ip] [-stdin] [-dry-run] -reason TEXT

Who is held back right now, and unlocking them in bulk, from the
held-subjects index (store.held_index_bytes turns it on). list prints a
page of the accounts and addresses held (identifier, flow, rule, wait);
its "next" is the -cursor of the next page. reset frees every subject of
the flow the index lists (of -subject, when given), or with -stdin the
identifiers on standard input, one a line (at most 1000), never taken as
arguments; -dry-run counts them first and changes nothing:

  tollgate admin held list -flow login -subject account
  tollgate admin held reset -flow login -subject account -dry-run -reason "incident 31"
  tollgate admin held reset -flow login -subject account -reason "incident 31"
  printf 'alice@example.com\nbob@example.com\n' | tollgate admin held reset -flow login -stdin -reason "ticket 4711"

flags: -url and -token as for the other admin actions (admin:read to
list, admin:write to reset).
`

// heldCmd runs `tollgate admin held list|reset`: see heldUsage. Exit codes
// are adminCmd's.
func heldCmd(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "tollgate admin held: %v\n%s", err, heldUsage)
		return 2
	}
	if len(args) == 0 || (args[0] != "list" && args[0] != "reset") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "help") {
			fmt.Fprint(stdout, heldUsage)
			return 0
		}
		return usageErr(errors.New("want list or reset"))
	}
	action := args[0]
	fs := flag.NewFlagSet("tollgate admin held", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("url", "http://127.0.0.1:8080", "")
	flow := fs.String("flow", "", "")
	subject := fs.String("subject", "", "")
	cursor := fs.String("cursor", "", "")
	limit := fs.Int("limit", 0, "")
	fromStdin := fs.Bool("stdin", false, "")
	dryRun := fs.Bool("dry-run", false, "")
	reason := fs.String("reason", "", "")
	token := fs.String("token", getenv("TOLLGATE_TOKEN"), "")
	if err := fs.Parse(args[1:]); err != nil {
		return usageErr(err)
	}
	list := action == "list"
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Errorf("unexpected argument %q: identifiers go on standard input (-stdin)", fs.Arg(0)))
	case *subject != "" && *subject != "account" && *subject != "ip":
		return usageErr(errors.New("-subject must be account or ip"))
	case list && (*fromStdin || *dryRun || *reason != ""):
		return usageErr(errors.New("-stdin, -dry-run and -reason are for reset"))
	case !list && (*cursor != "" || *limit != 0):
		return usageErr(errors.New("-cursor and -limit are for list"))
	case !list && *flow == "":
		return usageErr(errors.New("-flow is required to reset"))
	case !list && *reason == "":
		return usageErr(errors.New("-reason is required to reset"))
	}

	method, path := http.MethodGet, "/v1/admin/held"
	var body []byte // none for a list
	if list {
		q := neturl.Values{}
		for k, v := range map[string]string{"flow": *flow, "kind": *subject, "cursor": *cursor} {
			if v != "" {
				q.Set(k, v)
			}
		}
		if *limit != 0 {
			q.Set("limit", strconv.Itoa(*limit))
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
	} else {
		reset := map[string]any{"flow": *flow, "reason": *reason}
		if *subject != "" {
			reset["kind"] = *subject
		}
		if *dryRun {
			reset["dry_run"] = true
		}
		if *fromStdin {
			var subjects []string
			sc := bufio.NewScanner(io.LimitReader(stdin, 1<<20))
			for sc.Scan() {
				if s := strings.TrimSpace(sc.Text()); s != "" && !slices.Contains(subjects, s) {
					subjects = append(subjects, s)
				}
			}
			if err := sc.Err(); err != nil {
				return usageErr(err)
			}
			if len(subjects) == 0 {
				return usageErr(errors.New("-stdin: no identifier on standard input"))
			}
			reset["subjects"] = subjects
		}
		body, _ = json.Marshal(reset)
		method, path = http.MethodPost, "/v1/admin/reset-held"
	}
	call := adminCall{name: "tollgate admin held", url: *url, token: *token, body: body, timeout: 30 * time.Second, limit: 8 << 20}
	return call.do(method, path, stdout, stderr, usageErr)
}
