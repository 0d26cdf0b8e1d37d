package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"slices"
	"strings"
	"time"
)

const adminUsage = `usage: tollgate admin explain|reset -flow FLOW -subject account|ip|destination [flags] < IDENTIFIER
       tollgate admin allow|deny -subject ip_range|destination_prefix|country -expires-in D -reason TEXT [flags] < VALUE
       tollgate admin entries [-flow FLOW]
       tollgate admin remove -id ID -reason TEXT
       tollgate admin held list|reset [flags]   (tollgate admin held help)

Calls a running tollgate's admin API for on-call use. The identifier (the
account, address, destination, range or prefix) is read from the first
line of standard input, never taken as an argument, so that it stays out
of shell history and the process list:

  echo alice@example.com | tollgate admin explain -flow login -subject account
  echo alice@example.com | tollgate admin reset -flow login -subject account -reason "ticket 4711"
  echo 203.0.113.0/24 | tollgate admin deny -flow login -subject ip_range -expires-in 4h -reason "incident 92"
  echo 198.51.100.0/24 | tollgate admin allow -subject ip_range -expires-in 1d -reason "office move"
  tollgate admin entries
  tollgate admin remove -id Hq3v0S2b1xY9nQe4a7LrVw -reason "incident 92 closed"

flags:
  -url URL         tollgate's base URL (default http://127.0.0.1:8080)
  -flow FLOW       the flow (required to explain and reset; for allow, deny
                   and entries, none means every flow)
  -subject KIND    explain, reset: account, ip or destination;
                   allow, deny: ip_range, destination_prefix or country
  -channel CH      with -subject destination: sms, voice, whatsapp or email
  -expires-in D    allow, deny (required): 1m to 30d, such as 90m, 12h, 7d
  -action A        deny only: block (the default) or captcha
  -id ID           remove (required): the entry's id, from entries
  -reason TEXT     reset, allow, deny, remove (required): why, with no identifier
  -ref REF         reset -subject account: your own reference for the account's
                   owner (your user id), passed only to the account.reset
                   notice so that its receiver knows whom it concerns
  -token T         a bearer token (default $TOLLGATE_TOKEN); needed when
                   tollgate authenticates callers: admin:read to explain and
                   list entries, admin:write for the rest
`

// adminCmd runs `tollgate admin`: see adminUsage. It prints the answer's
// JSON and returns 0 on a 2xx, 1 on any other answer or a failed call, 2 on
// a usage error.
func adminCmd(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "tollgate admin: %v\n%s", err, adminUsage)
		return 2
	}
	if len(args) > 0 && args[0] == "held" {
		return heldCmd(args[1:], stdin, stdout, stderr, getenv)
	}
	actions := []string{"explain", "reset", "allow", "deny", "entries", "remove"}
	if len(args) == 0 || !slices.Contains(actions, args[0]) {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "help") {
			fmt.Fprint(stdout, adminUsage)
			return 0
		}
		return usageErr(errors.New("want explain, reset, allow, deny, entries, remove or held"))
	}
	action := args[0]
	fs := flag.NewFlagSet("tollgate admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("url", "http://127.0.0.1:8080", "")
	flow := fs.String("flow", "", "")
	subject := fs.String("subject", "", "")
	channel := fs.String("channel", "", "")
	expiresIn := fs.String("expires-in", "", "")
	denyAction := fs.String("action", "", "")
	id := fs.String("id", "", "")
	reason := fs.String("reason", "", "")
	ref := fs.String("ref", "", "")
	token := fs.String("token", getenv("TOLLGATE_TOKEN"), "")
	if err := fs.Parse(args[1:]); err != nil {
		return usageErr(err)
	}
	entry := action == "allow" || action == "deny"
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Errorf("unexpected argument %q: the identifier goes on standard input", fs.Arg(0)))
	case (action == "explain" || action == "reset") && *flow == "":
		return usageErr(errors.New("-flow is required"))
	case (action == "explain" || action == "reset") && !slices.Contains([]string{"account", "ip", "destination"}, *subject):
		return usageErr(errors.New("-subject must be account, ip or destination"))
	case entry && !slices.Contains([]string{"ip_range", "destination_prefix", "country"}, *subject):
		return usageErr(errors.New("-subject must be ip_range, destination_prefix or country"))
	case entry && *expiresIn == "":
		return usageErr(errors.New("-expires-in is required"))
	case *denyAction != "" && action != "deny":
		return usageErr(errors.New("-action is for deny only"))
	case action == "remove" && *id == "":
		return usageErr(errors.New("-id is required"))
	case action != "explain" && action != "entries" && *reason == "":
		return usageErr(fmt.Errorf("-reason is required to %s", action))
	case *ref != "" && (action != "reset" || *subject != "account"):
		return usageErr(errors.New("-ref is for reset -subject account only"))
	}

	method, path, body := http.MethodPost, "/v1/admin/"+action, map[string]string{}
	switch action {
	case "entries":
		method, body = http.MethodGet, nil
		if *flow != "" {
			path += "?flow=" + neturl.QueryEscape(*flow)
		}
	case "remove":
		body["id"], body["reason"] = *id, *reason
	default:
		line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
		value := strings.TrimSpace(line)
		if value == "" {
			if err != nil && !errors.Is(err, io.EOF) {
				return usageErr(err)
			}
			return usageErr(errors.New("no identifier on standard input"))
		}
		body[*subject] = value
		if *flow != "" {
			body["flow"] = *flow
		}
		if *channel != "" {
			body["channel"] = *channel
		}
		if action != "explain" {
			body["reason"] = *reason
		}
		if *ref != "" {
			body["ref"] = *ref
		}
		if entry {
			body["expires_in"] = *expiresIn
		}
		if *denyAction != "" {
			body["action"] = *denyAction
		}
	}
	call := adminCall{name: "tollgate admin", url: *url, token: *token, timeout: 10 * time.Second, limit: 1 << 20}
	if body != nil {
		call.body, _ = json.Marshal(body)
	}
	return call.do(method, path, stdout, stderr, usageErr)
}

// adminCall is one call of `tollgate admin` to the admin API: the JSON body
// (none when nil) with the bearer token, the answer copied to stdout.
type adminCall struct {
	name    string // the command, for its messages
	url     string // the API's base URL
	token   string // the bearer token, or none
	body    []byte
	timeout time.Duration
	limit   int64 // the bytes of the answer copied at most
}

// do makes the call. It returns 0 on a 2xx answer, 1 on any other answer or
// a failed call, and usageErr's code when the URL does not make a request.
func (c adminCall) do(method, path string, stdout, stderr io.Writer, usageErr func(error) int) int {
	var rd io.Reader
	if c.body != nil {
		rd = bytes.NewReader(c.body)
	}
	req, err := http.NewRequest(method, strings.TrimRight(c.url, "/")+path, rd)
	if err != nil {
		return usageErr(err)
	}
	if c.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := (&http.Client{Timeout: c.timeout}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.name, err)
		return 1
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(res.Body, c.limit))
	stdout.Write(out)
	if res.StatusCode/100 != 2 {
		fmt.Fprintf(stderr, "%s: %s answered %d\n", c.name, c.url, res.StatusCode)
		return 1
	}
	return 0
}
