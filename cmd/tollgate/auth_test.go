package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// authFixture writes an Ed25519 key pair and an HS256 secret to files and
// a config whose auth section trusts them for two tenants, and returns the
// config's path and the private key and secret files.
func authFixture(t *testing.T) (cfgPath, privFile, secretFile string) {
	t.Helper()
	dir := t.TempDir()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pubFile := write("ed.pub.pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	privFile = write("ed.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}))
	secretFile = write("hs.key", []byte("a-shared-secret-of-at-least-32-bytes!!\n"))
	cfgPath = write("tollgate.yaml", fmt.Appendf(nil, `listen: 127.0.0.1:0
auth:
  audience: tollgate
  keys:
    - {id: ed, alg: EdDSA, public_key_file: %q, tenants: [shop]}
    - {id: hs, alg: HS256, secret_file: %q, tenants: [bank]}
  tenants:
    - {name: shop, issuer: "https://auth.shop.example"}
    - {name: bank, issuer: "https://auth.bank.example"}
`, pubFile, secretFile))
	return cfgPath, privFile, secretFile
}

// token runs `tollgate token args...`, which must succeed.
func token(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := tokenCmd(args, &out, &errOut, time.Now); code != 0 {
		t.Fatalf("tollgate token %v: exit %d: %s", args, code, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

// TestAuth_TenantsAndTokens serves with callers authenticated: a call
// without a token, or with a forged one, is a 401 problem with
// WWW-Authenticate and changes nothing; tokens from `tollgate token` (an
// Ed25519 key for one tenant, the HS256 secret for another) are accepted;
// the same account in the two tenants has two independent counters; an
// admin-only token cannot call the verdict routes.
func TestAuth_TenantsAndTokens(t *testing.T) {
	cfgPath, privFile, secretFile := authFixture(t)
	cfg, err := config.Load(cfgPath, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Secret = []byte(secret32)
	addr, logs := startServe(t, cfg)
	shop := token(t, "-key", privFile, "-kid", "ed", "-config", cfgPath, "-tenant", "shop")
	bank := token(t, "-key", secretFile, "-alg", "HS256", "-kid", "hs", "-config", cfgPath, "-tenant", "bank")
	adminOnly := token(t, "-key", privFile, "-kid", "ed", "-config", cfgPath, "-tenant", "shop", "-scopes", "admin:read")
	wrongIssuer := token(t, "-key", privFile, "-kid", "ed", "-issuer", "https://auth.shop.example", "-audience", "tollgate", "-tenant", "bank")

	call := func(tok, path string, body map[string]any) (int, http.Header, map[string]any) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+path, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var m map[string]any
		json.Unmarshal(raw, &m)
		return res.StatusCode, res.Header, m
	}
	report := map[string]any{"flow": "login", "account": "same@example.com", "ip": "192.0.2.7", "outcome": "failure"}
	check := map[string]any{"flow": "login", "account": "same@example.com", "ip": "192.0.2.7"}

	for _, c := range []struct {
		name, token, problem string
		status               int
	}{
		{"no token", "", "unauthenticated", 401},
		{"a forged signature", shop[:len(shop)-4] + "AAAA", "unauthenticated", 401},
		{"the shop's key for the bank's tenant", wrongIssuer, "unauthenticated", 401},
		{"an admin-only token", adminOnly, "forbidden", 403},
	} {
		status, h, m := call(c.token, "/v1/report", report)
		if status != c.status || m["type"] != "https://tollgate.dev/problems/"+c.problem {
			t.Errorf("%s: %d %v, want %d %s", c.name, status, m, c.status, c.problem)
		}
		if www := h.Get("WWW-Authenticate"); (c.status == 401) != strings.HasPrefix(www, "Bearer") {
			t.Errorf("%s: WWW-Authenticate %q", c.name, www)
		}
	}
	// Six failures in the shop's tenant put its account in backoff...
	for i := range 6 {
		if status, _, m := call(shop, "/v1/report", report); status != 200 {
			t.Fatalf("shop report %d: %d %v", i, status, m)
		}
	}
	if _, _, m := call(shop, "/v1/check", check); m["action"] != "delay" {
		t.Errorf("shop's check after 6 failures: %v, want delay", m)
	}
	// ... and the same account in the bank's tenant is untouched, also by
	// the four refused reports above.
	if _, _, m := call(bank, "/v1/check", check); m["action"] != "proceed" {
		t.Errorf("bank's check of the same account: %v, want proceed", m)
	}
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	body := string(raw)
	for _, want := range []string{`tollgate_auth_failures_total{reason="missing"} 1`, `tollgate_auth_failures_total{reason="scope"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(logs.String(), shop) || strings.Contains(logs.String(), "same@example.com") {
		t.Error("the log holds a token or an account")
	}
}

// TestAuth_ListensBeyondLoopbackOnlyWithAuth: validate-config refuses a
// public listen address without an auth section and accepts it with one.
func TestAuth_ListensBeyondLoopbackOnlyWithAuth(t *testing.T) {
	cfgPath, _, _ := authFixture(t)
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	public := filepath.Join(filepath.Dir(cfgPath), "public.yaml")
	os.WriteFile(public, bytes.Replace(data, []byte("127.0.0.1:0"), []byte("0.0.0.0:8080"), 1), 0o600)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"validate-config", public}, &out, &errOut, testkit.Env()); code != 0 {
		t.Errorf("a public address with auth: exit %d, %s", code, errOut.String())
	}
	noAuth := filepath.Join(filepath.Dir(cfgPath), "noauth.yaml")
	os.WriteFile(noAuth, []byte("listen: 0.0.0.0:8080\n"), 0o600)
	out.Reset()
	errOut.Reset()
	if code := run(context.Background(), []string{"validate-config", noAuth}, &out, &errOut, testkit.Env()); code != 1 || !strings.Contains(errOut.String(), "without caller authentication") {
		t.Errorf("a public address without auth: exit %d, %s", code, errOut.String())
	}
}

// TestAdminCmd_ExplainAndResetAgainstServe: `tollgate admin` reads the
// identifier from standard input, explains an account in backoff, resets
// it with a reason, and refuses a reset without one.
func TestAdminCmd_ExplainAndResetAgainstServe(t *testing.T) {
	addr, logs := startServe(t, testConfig())
	url := "http://" + addr
	for range 6 {
		http.Post(url+"/v1/report", "application/json", strings.NewReader(`{"flow":"login","account":"zoe@example.com","ip":"192.0.2.3","outcome":"failure"}`))
	}
	admin := func(stdin string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := adminCmd(args, strings.NewReader(stdin), &out, &errOut, testkit.Env())
		return code, out.String(), errOut.String()
	}
	code, out, errOut := admin("zoe@example.com\n", "explain", "-url", url, "-flow", "login", "-subject", "account")
	if code != 0 || !strings.Contains(out, `"action":"delay"`) || !strings.Contains(out, `"count":6`) {
		t.Fatalf("explain: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := admin("zoe@example.com\n", "reset", "-url", url, "-flow", "login", "-subject", "account"); code != 2 || !strings.Contains(errOut, "-reason") {
		t.Errorf("a reset without a reason: %d %s", code, errOut)
	}
	if code, _, errOut := admin("", "explain", "-url", url, "-flow", "login", "-subject", "account"); code != 2 || !strings.Contains(errOut, "standard input") {
		t.Errorf("no identifier: %d %s", code, errOut)
	}
	if code, _, errOut := admin("192.0.2.3\n", "reset", "-url", url, "-flow", "login", "-subject", "ip", "-reason", "x", "-ref", "user-1"); code != 2 || !strings.Contains(errOut, "-ref") {
		t.Errorf("a ref on an address's reset: %d %s", code, errOut)
	}
	if code, out, _ := admin("zoe@example.com\n", "reset", "-url", url, "-flow", "login", "-subject", "account", "-reason", "x", "-ref", strings.Repeat("r", 129)); code != 1 || !strings.Contains(out, `"field":"ref"`) {
		t.Errorf("a ref too long: %d %s, want tollgate's 400 on field ref", code, out)
	}
	code, out, errOut = admin("zoe@example.com\n", "reset", "-url", url, "-flow", "login", "-subject", "account", "-reason", "on-call test", "-ref", "user-8c1f2e")
	if code != 0 || !strings.Contains(out, `"deleted":`) {
		t.Fatalf("reset: %d %s %s", code, out, errOut)
	}
	if _, out, _ = admin("zoe@example.com\n", "explain", "-url", url, "-flow", "login", "-subject", "account"); !strings.Contains(out, `"action":"proceed"`) {
		t.Errorf("after the reset: %s", out)
	}
	if !strings.Contains(logs.String(), `"reason":"on-call test"`) || strings.Contains(logs.String(), "zoe@example.com") || strings.Contains(logs.String(), "user-8c1f2e") {
		t.Errorf("audit line missing, or the account in the log:\n%s", logs.String())
	}
}

// TestEndToEnd_AuthTenantsAndAdmin runs the real binary with callers
// authenticated and two tenants: the shop's failures put an account in
// backoff there and not in the bank; the shop's admin token explains and
// resets it (one audit line naming who, tenant and reason); a verdicts token
// cannot reset; no log line holds the account or a token.
func TestEndToEnd_AuthTenantsAndAdmin(t *testing.T) {
	cfgPath, privFile, secretFile := authFixture(t)
	bin := tollgateBinary(t)
	token := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"token", "-config", cfgPath}, args...)...).Output()
		if err != nil {
			t.Fatalf("tollgate token %v: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	shop := token("-key", privFile, "-kid", "ed", "-tenant", "shop", "-sub", "login-service")
	desk := token("-key", privFile, "-kid", "ed", "-tenant", "shop", "-sub", "support-desk", "-scopes", "admin:read,admin:write")
	bank := token("-key", secretFile, "-alg", "HS256", "-kid", "hs", "-tenant", "bank")
	p := startTollgate(t, "TOLLGATE_CONFIG="+cfgPath, "TOLLGATE_SECRET="+secret32)

	call := func(tok, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	const acct = `"account":"carol@example.com"`
	for range 6 {
		if status, body := call(shop, "/v1/report", `{"flow":"login",`+acct+`,"ip":"192.0.2.8","outcome":"failure"}`); status != 200 {
			t.Fatalf("report: %d %s", status, body)
		}
	}
	if _, body := call(bank, "/v1/check", `{"flow":"login",`+acct+`,"ip":"192.0.2.8"}`); !strings.Contains(body, `"action":"proceed"`) {
		t.Errorf("the bank's check of the same account: %s", body)
	}
	if status, body := call(desk, "/v1/admin/explain", `{"flow":"login",`+acct+`}`); status != 200 || !strings.Contains(body, `"action":"delay"`) {
		t.Errorf("explain: %d %s", status, body)
	}
	if status, _ := call(shop, "/v1/admin/reset", `{"flow":"login",`+acct+`,"reason":"x"}`); status != 403 {
		t.Errorf("a verdicts token resetting: %d", status)
	}
	if status, body := call(desk, "/v1/admin/reset", `{"flow":"login",`+acct+`,"reason":"ticket 7: owner verified"}`); status != 200 {
		t.Fatalf("reset: %d %s", status, body)
	}
	if _, body := call(shop, "/v1/check", `{"flow":"login",`+acct+`,"ip":"192.0.2.8"}`); !strings.Contains(body, `"action":"proceed"`) {
		t.Errorf("the shop's check after the reset: %s", body)
	}
	// A block the shop's desk adds holds the shop's calls from the range,
	// not the bank's; a verdicts token cannot add one.
	const block = `{"flow":"login","ip_range":"203.0.113.0/24","expires_in":"1h","reason":"incident 3"}`
	if status, _ := call(shop, "/v1/admin/deny", block); status != 403 {
		t.Errorf("a verdicts token blocking: %d", status)
	}
	if status, body := call(desk, "/v1/admin/deny", block); status != 201 || !strings.Contains(body, `"by":"support-desk"`) {
		t.Fatalf("deny: %d %s", status, body)
	}
	for tok, want := range map[string]string{shop: `"reasons":["blocked"]`, bank: `"action":"proceed"`} {
		if _, body := call(tok, "/v1/check", `{"flow":"login",`+acct+`,"ip":"203.0.113.8"}`); !strings.Contains(body, want) {
			t.Errorf("a check from the blocked range: %s, want %s", body, want)
		}
	}
	testkit.Eventually(5*time.Second, func() bool {
		logs := p.logs.String()
		return strings.Contains(logs, `"msg":"admin block"`) && strings.Contains(logs, `"msg":"admin reset"`)
	})
	logs := p.logs.String()
	for _, want := range []string{`"msg":"admin reset"`, `"by":"support-desk"`, `"tenant":"shop"`, `"reason":"ticket 7: owner verified"`, `"msg":"admin block"`, `"reason":"incident 3"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s:\n%s", want, logs)
		}
	}
	for _, secret := range []string{"carol@example.com", "203.0.113", shop, desk, bank} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds an account or a token")
		}
	}
}

// TestAdminCmd_DenyEntriesRemoveAgainstServe: on-call blocks a range from
// the command line (the range on standard input), lists the entry, and
// removes it by id; a check from the range is refused in between.
func TestAdminCmd_DenyEntriesRemoveAgainstServe(t *testing.T) {
	addr, logs := startServe(t, testConfig())
	url := "http://" + addr
	admin := func(stdin string, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := adminCmd(args, strings.NewReader(stdin), &out, &errOut, testkit.Env())
		return code, out.String(), errOut.String()
	}
	check := func() string {
		res, err := http.Post(url+"/v1/check", "application/json", strings.NewReader(`{"flow":"login","account":"a","ip":"203.0.113.9"}`))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return string(b)
	}
	if code, _, errOut := admin("203.0.113.0/24\n", "deny", "-url", url, "-subject", "ip_range", "-reason", "r"); code != 2 || !strings.Contains(errOut, "-expires-in") {
		t.Errorf("deny without -expires-in: %d %s", code, errOut)
	}
	if code, _, errOut := admin("", "deny", "-url", url, "-subject", "ip_range", "-expires-in", "1h", "-reason", "r"); code != 2 || !strings.Contains(errOut, "standard input") {
		t.Errorf("deny without a range: %d %s", code, errOut)
	}
	code, out, errOut := admin("203.0.113.0/24\n", "deny", "-url", url, "-flow", "login", "-subject", "ip_range", "-expires-in", "2h", "-reason", "incident 5")
	if code != 0 || !strings.Contains(out, `"kind":"block"`) {
		t.Fatalf("deny: %d %s %s", code, out, errOut)
	}
	var x struct{ ID string }
	if err := json.Unmarshal([]byte(out), &x); err != nil || x.ID == "" {
		t.Fatalf("deny answered %s", out)
	}
	if got := check(); !strings.Contains(got, `"reasons":["blocked"]`) {
		t.Errorf("a check from the blocked range: %s", got)
	}
	if code, out, _ := admin("", "entries", "-url", url); code != 0 || !strings.Contains(out, x.ID) {
		t.Errorf("entries: %d %s", code, out)
	}
	if code, out, errOut := admin("", "remove", "-url", url, "-id", x.ID, "-reason", "incident 5 closed"); code != 0 || !strings.Contains(out, `"removed":true`) {
		t.Errorf("remove: %d %s %s", code, out, errOut)
	}
	if got := check(); !strings.Contains(got, `"action":"proceed"`) {
		t.Errorf("after the removal: %s", got)
	}
	if l := logs.String(); !strings.Contains(l, `"msg":"admin block"`) || strings.Contains(l, "203.0.113") {
		t.Errorf("no audit line, or the range in the log:\n%s", l)
	}
}
