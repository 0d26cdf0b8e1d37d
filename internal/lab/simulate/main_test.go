package simulate

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// small is a quick scenario with every source of randomness: random
// addresses, typos drawn at random and random passwords.
const small = `name: small <test> & co
duration: 2h
seed: 42
actors:
  - name: attacker
    accounts: {generate: 30}
    ips: {random_ipv4: 7}
    rate: 1/m
    solves_captcha: false
  - name: users
    accounts: {generate: 10}
    ips: {random_ipv6_in: "2001:db8::/48", count: 3}
    every: 20m
    typo_rate: 0.3
expect:
  attacker.attempts: ">= 1"
  users.delayed: "== 0"
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runMain(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestMain_ExitCodes(t *testing.T) {
	pass := writeFile(t, "pass.yaml", small)
	fail := writeFile(t, "fail.yaml", strings.Replace(small, `users.delayed: "== 0"`, `users.delayed: "> 0"`, 1))
	bad := writeFile(t, "bad.yaml", strings.Replace(small, "rate: 1/m", "rate: 1/x", 1))
	lax := writeFile(t, "lax.yaml", "flows:\n  login:\n    rules:\n      - {name: account_backoff, free: 1000}\n")
	badPolicy := writeFile(t, "badpolicy.yaml", "flows:\n  login:\n    rules:\n      - {name: account_backoff, free: -1}\n")
	botnet := filepath.Join("..", "..", "..", "scenarios", "brute-force-botnet.yaml")
	tests := []struct {
		name       string
		args       []string
		want       int
		wantStderr string
	}{
		{"expectations hold", []string{pass}, 0, ""},
		{"an expectation fails", []string{fail}, 1, ""},
		{"one of two fails", []string{pass, fail}, 1, ""},
		{"scenario error", []string{bad}, 2, bad + `: line 8: actors[0].rate: invalid rate "1/x" (use N/s, N/m or N/h)`},
		{"no scenario", nil, 2, "no scenario given"},
		{"missing file", []string{filepath.Join(t.TempDir(), "nope.yaml")}, 2, "no such file"},
		{"unknown flag", []string{"-fast", pass}, 2, "flag provided but not defined: -fast"},
		{"flags after the scenario", []string{pass, "-json"}, 0, ""},
		{"svg with two scenarios", []string{"-svg", filepath.Join(t.TempDir(), "x.svg"), pass, pass}, 2, "-svg takes exactly one scenario"},
		{"config makes the botnet win", []string{botnet, "-config", lax}, 1, ""},
		{"bad config", []string{"-config", badPolicy, pass}, 2, badPolicy + ": "},
		{"help", []string{"-h"}, 0, "usage: tollgate-lab simulate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runMain(tt.args...)
			if code != tt.want {
				t.Errorf("Main(%q) = %d, want %d; stderr:\n%s", tt.args, code, tt.want, stderr)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("Main(%q) stderr = %q, want it to contain %q", tt.args, stderr, tt.wantStderr)
			}
		})
	}
}

func TestMain_Text(t *testing.T) {
	path := writeFile(t, "s.yaml", small)
	code, out, _ := runMain(path)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"actor ", "accounts_checked_before_captcha", "proceeded_max_24h", "failures_max_24h",
		"\nattacker ", "\nusers ", "ok  attacker.attempts >= 1", "ok  users.delayed == 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "mint_logins") {
		t.Errorf("output has mint columns, but no actor mints:\n%s", out)
	}
}

// The mint columns appear when an actor mints device tokens.
func TestMain_TextMintColumns(t *testing.T) {
	path := writeFile(t, "s.yaml", strings.Replace(pair, "device_token_from: owner", "mints_device_token_in: login", 1)+
		"expect:\n  thief.mint_logins: \">= 1\"\n  thief.mint_refused: \">= 0\"\n")
	code, out, stderr := runMain(path)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 5 || !strings.HasSuffix(strings.TrimSpace(lines[2]), "mint_logins  mint_refused") {
		t.Fatalf("header = %q, want it to end in the mint columns:\n%s", lines[2], out)
	}
	if f := strings.Fields(lines[3]); f[0] != "thief" || f[len(f)-2] != f[1] {
		t.Errorf("thief row = %q, want as many mint logins as attempts", lines[3])
	}
	if f := strings.Fields(lines[4]); f[0] != "owner" || f[len(f)-2] != "0" || f[len(f)-1] != "0" {
		t.Errorf("owner row = %q, want no mint logins", lines[4])
	}
	for _, want := range []string{"ok  thief.mint_logins >= 1", "ok  thief.mint_refused >= 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The denied column, and the denied key of the JSON form, appear when a
// send was denied; the JSON form of an actor never denied has no denied key.
func TestMain_Denied(t *testing.T) {
	path := writeFile(t, "s.yaml", `name: premium
duration: 1m
actors:
  - name: pumper
    destinations: ["+44 909 8790000"]
    channel: voice
    ips: [192.0.2.1]
    rate: 6/m
  - name: user
    destinations: ["+44 7400 123456"]
    ips: [192.0.2.2]
    every: 1h
expect:
  pumper.denied: "== 6"
  user.proceeded: "== 1"
`)
	code, out, stderr := runMain(path)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 5 || !strings.HasPrefix(strings.Join(strings.Fields(lines[2]), " "), "actor attempts proceeded delayed captcha denied first_delay_at") {
		t.Fatalf("header = %q, want a denied column after captcha:\n%s", lines[2], out)
	}
	if got, want := strings.Fields(lines[3])[:6], []string{"pumper", "6", "0", "0", "0", "6"}; !slices.Equal(got, want) {
		t.Errorf("pumper row starts %q, want %q", got, want)
	}
	if !strings.Contains(out, "ok  pumper.denied == 6") {
		t.Errorf("output lacks the denied expectation:\n%s", out)
	}

	_, out, _ = runMain("-json", path)
	var v struct {
		Actors []json.RawMessage `json:"actors"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if got := objectKeys(t, string(v.Actors[0])); !slices.Equal(got[:6], []string{"name", "attempts", "proceeded", "delayed", "captcha", "denied"}) {
		t.Errorf("pumper keys = %q, want denied after captcha", got)
	}
	if got := objectKeys(t, string(v.Actors[1])); slices.Contains(got, "denied") {
		t.Errorf("user keys = %q, want no denied key (omitted while zero)", got)
	}
}

func TestMain_JSONShape(t *testing.T) {
	path := writeFile(t, "s.yaml", small)
	code, out, stderr := runMain("-json", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := strings.Count(out, "\n"); got != 1 {
		t.Errorf("output has %d lines, want one JSON object on one line", got)
	}
	// Key order matters to readers of the output: check it on the token stream.
	if got, want := objectKeys(t, out), []string{"scenario", "duration", "actors", "expectations"}; !reflect.DeepEqual(got, want) {
		t.Errorf("top-level keys = %q, want %q", got, want)
	}
	var v struct {
		Scenario     string            `json:"scenario"`
		Duration     string            `json:"duration"`
		Actors       []json.RawMessage `json:"actors"`
		Expectations []json.RawMessage `json:"expectations"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatal(err)
	}
	if v.Scenario != "small <test> & co" || v.Duration != "2h0m0s" {
		t.Errorf("scenario, duration = %q, %q", v.Scenario, v.Duration)
	}
	if len(v.Actors) != 2 || len(v.Expectations) != 2 {
		t.Fatalf("%d actors and %d expectations, want 2 and 2", len(v.Actors), len(v.Expectations))
	}
	wantActor := []string{"name", "attempts", "proceeded", "delayed", "captcha", "first_delay_at", "first_captcha_at", "accounts_checked", "accounts_checked_before_captcha",
		"proceeded_max_24h", "failures_max_24h", "mint_logins", "mint_refused", "step_ups", "device_tokens"}
	for _, a := range v.Actors {
		if got := objectKeys(t, string(a)); !reflect.DeepEqual(got, wantActor) {
			t.Errorf("actor keys = %q, want %q", got, wantActor)
		}
	}
	for i, e := range v.Expectations {
		if got, want := objectKeys(t, string(e)), []string{"expr", "ok"}; !reflect.DeepEqual(got, want) {
			t.Errorf("expectation keys = %q, want %q", got, want)
		}
		var x struct {
			Expr string `json:"expr"`
			OK   bool   `json:"ok"`
		}
		json.Unmarshal(e, &x)
		if want := []string{"attacker.attempts >= 1", "users.delayed == 0"}[i]; x.Expr != want || !x.OK {
			t.Errorf("expectation %d = %+v, want %q to hold (file order)", i, x, want)
		}
	}
}

// objectKeys lists the keys of the JSON object s, in order.
func objectKeys(t *testing.T, s string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %q", s)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

func TestMain_Deterministic(t *testing.T) {
	path := writeFile(t, "s.yaml", small)
	_, first, _ := runMain("-json", path)
	for range 2 {
		if _, again, _ := runMain(path, "-json"); again != first {
			t.Fatalf("same seed, different output:\n%s\n%s", first, again)
		}
	}
	other := writeFile(t, "o.yaml", strings.Replace(small, "seed: 42", "seed: 43", 1))
	if _, out, _ := runMain("-json", other); out == first {
		t.Logf("seed 43 gave the same output as seed 42 (possible, but unlikely)")
	}
}

func TestMain_SVG(t *testing.T) {
	path := writeFile(t, "s.yaml", small)
	svg := filepath.Join(t.TempDir(), "chart.svg")
	if code, _, stderr := runMain(path, "-svg", svg); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root string
	var paths, texts int
	var title strings.Builder
	inTitle := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, data)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
				if tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace = %q", tok.Name.Space)
				}
			}
			switch tok.Name.Local {
			case "path":
				paths++
			case "text":
				texts++
			case "title":
				inTitle = title.Len() == 0
			}
		case xml.CharData:
			if inTitle {
				title.Write(tok)
			}
		case xml.EndElement:
			inTitle = false
		}
	}
	if root != "svg" {
		t.Errorf("root element = %q, want svg", root)
	}
	if got, want := title.String(), "small <test> & co"; got != want {
		t.Errorf("title = %q, want %q", got, want)
	}
	if paths < 3 { // the axes and one line per actor
		t.Errorf("%d paths, want the axes and a line per actor", paths)
	}
	if texts < 10 {
		t.Errorf("%d texts, want a title, axis labels, tick labels and a legend", texts)
	}
}

// -config takes the same file as `tollgate serve -config`: server keys are
// accepted, and the flows change the outcome.
func TestMain_ConfigIsTheServeConfig(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "tollgate.yaml")
	os.WriteFile(cfg, []byte("listen: 127.0.0.1:9090\nstore:\n  redis:\n    url: redis://127.0.0.1:6379\nflows:\n  login:\n    rules:\n      - {name: account_backoff, max: 15m}\n"), 0o600)
	var out, errOut bytes.Buffer
	code := Main([]string{"-json", "-config", cfg, "../../../scenarios/brute-force-botnet.yaml"}, &out, &errOut)
	if code != 1 || !strings.Contains(out.String(), `"ok":false`) {
		t.Errorf("a 15m cap lets the botnet past NIST's 100: exit %d, out %s, err %s", code, out.String(), errOut.String())
	}
}
