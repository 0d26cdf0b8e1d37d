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
	"strings"
	"time"
)

const adminUsage = `usage: tollgate admin explain|reset -flow FLOW -subject account|ip|destination [flags] < IDENTIFIER

Calls a running tollgate's admin API for on-call use. The identifier (the
account, address, or destination) is read from the first line of standard
input, never taken as an argument, so that it stays out of shell history
and the process list:

  echo alice@example.com | tollgate admin explain -flow login -subject account
  echo alice@example.com | tollgate admin reset -flow login -subject account -reason "ticket 4711"

flags:
  -url URL         tollgate's base URL (default http://127.0.0.1:8080)
  -flow FLOW       the flow (required)
  -subject KIND    account, ip or destination (required)
  -channel CH      with -subject destination: sms, voice, whatsapp or email
  -reason TEXT     reset only (required there): why, with no identifier
  -token T         a bearer token (default $TOLLGATE_TOKEN); needed when
                   tollgate authenticates callers: admin:read to explain,
                   admin:write to reset
`

// adminCmd runs `tollgate admin`: see adminUsage. It prints the answer's
// JSON and returns 0 on a 200, 1 on any other answer or a failed call, 2 on
// a usage error.
func adminCmd(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	usageErr := func(err error) int {
		fmt.Fprintf(stderr, "tollgate admin: %v\n%s", err, adminUsage)
		return 2
	}
	if len(args) == 0 || (args[0] != "explain" && args[0] != "reset") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "help") {
			fmt.Fprint(stdout, adminUsage)
			return 0
		}
		return usageErr(errors.New("want explain or reset"))
	}
	action := args[0]
	fs := flag.NewFlagSet("tollgate admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	url := fs.String("url", "http://127.0.0.1:8080", "")
	flow := fs.String("flow", "", "")
	subject := fs.String("subject", "", "")
	channel := fs.String("channel", "", "")
	reason := fs.String("reason", "", "")
	token := fs.String("token", getenv("TOLLGATE_TOKEN"), "")
	if err := fs.Parse(args[1:]); err != nil {
		return usageErr(err)
	}
	switch {
	case fs.NArg() > 0:
		return usageErr(fmt.Errorf("unexpected argument %q: the identifier goes on standard input", fs.Arg(0)))
	case *flow == "":
		return usageErr(errors.New("-flow is required"))
	case *subject != "account" && *subject != "ip" && *subject != "destination":
		return usageErr(errors.New("-subject must be account, ip or destination"))
	case action == "reset" && *reason == "":
		return usageErr(errors.New("-reason is required to reset"))
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	id := strings.TrimSpace(line)
	if id == "" {
		if err != nil && !errors.Is(err, io.EOF) {
			return usageErr(err)
		}
		return usageErr(errors.New("no identifier on standard input"))
	}
	body := map[string]string{"flow": *flow, *subject: id}
	if *channel != "" {
		body["channel"] = *channel
	}
	if action == "reset" {
		body["reason"] = *reason
	}
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, strings.TrimRight(*url, "/")+"/v1/admin/"+action, bytes.NewReader(b))
	if err != nil {
		return usageErr(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if *token != "" {
		req.Header.Set("Authorization", "Bearer "+*token)
	}
	res, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "tollgate admin: %v\n", err)
		return 1
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	stdout.Write(out)
	if res.StatusCode != http.StatusOK {
		fmt.Fprintf(stderr, "tollgate admin: %s answered %d\n", *url, res.StatusCode)
		return 1
	}
	return 0
}
