package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// TestAdminCmd_HeldListThenUnlockAgainstServe: with the index on, `tollgate
// admin held list` prints the accounts held in login, a dry run counts
// them, and one reset frees them all.
func TestAdminCmd_HeldListThenUnlockAgainstServe(t *testing.T) {
	cfg := testConfig()
	cfg.HeldIndexBytes = 1 << 20
	addr, logs := startServe(t, cfg)
	url := "http://" + addr
	accounts := []string{"yan@example.com", "zoe@example.com"}
	for _, a := range accounts {
		for range 6 {
			res, err := http.Post(url+"/v1/report", "application/json", strings.NewReader(`{"flow":"login","account":"`+a+`","ip":"192.0.2.3","outcome":"failure"}`))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}
	}
	admin := func(stdin string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := adminCmd(args, strings.NewReader(stdin), &out, &errOut, testkit.Env())
		return code, out.String(), errOut.String()
	}
	code, out, errOut := admin("", "held", "list", "-url", url, "-flow", "login", "-subject", "account")
	if code != 0 {
		t.Fatalf("list: %d %s %s", code, out, errOut)
	}
	var list struct {
		Subjects []struct{ Subject, Rule string }
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list.Subjects {
		got = append(got, s.Subject)
	}
	slices.Sort(got)
	if !slices.Equal(got, accounts) {
		t.Fatalf("held list = %q, want %q", got, accounts)
	}
	if code, _, errOut := admin("", "held", "reset", "-url", url, "-flow", "login"); code != 2 || !strings.Contains(errOut, "-reason") {
		t.Errorf("a reset without a reason: %d %s", code, errOut)
	}
	if code, _, errOut := admin("", "held", "reset", "-url", url, "-flow", "login", "-reason", "x", "zoe@example.com"); code != 2 || !strings.Contains(errOut, "standard input") {
		t.Errorf("an identifier as an argument: %d %s", code, errOut)
	}
	if code, out, _ := admin("", "held", "reset", "-url", url, "-flow", "login", "-subject", "account", "-dry-run", "-reason", "incident 3"); code != 0 || !strings.Contains(out, `"matched":2`) || !strings.Contains(out, `"reset":0`) {
		t.Errorf("dry run: %d %s", code, out)
	}
	if code, out, _ := admin("zoe@example.com\n", "held", "reset", "-url", url, "-flow", "login", "-stdin", "-reason", "ticket 5"); code != 0 || !strings.Contains(out, `"reset":1`) {
		t.Errorf("reset of the one named: %d %s", code, out)
	}
	if code, out, _ := admin("", "held", "reset", "-url", url, "-flow", "login", "-reason", "incident 3"); code != 0 || !strings.Contains(out, `"reset":1`) {
		t.Errorf("reset of the rest: %d %s", code, out)
	}
	if code, out, _ := admin("", "held", "list", "-url", url, "-flow", "login"); code != 0 || strings.Contains(out, "example.com") {
		t.Errorf("after the unlock: %d %s", code, out)
	}
	for _, a := range accounts {
		if strings.Contains(logs.String(), a) {
			t.Errorf("the log holds %s", a)
		}
	}
}
