package api_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api"
	"github.com/tollgate-auth/tollgate/auth"
	"github.com/tollgate-auth/tollgate/challenge"
)

// challengeHarness is a harness whose API serves the challenge routes
// with c (on the harness's clock), behind v when v is set.
func challengeHarness(t *testing.T, cfg challenge.Config, v *auth.Verifier) (*harness, *challenge.Challenger) {
	t.Helper()
	h := newHarness(t, func(c *harnessConfig) { c.engine.Tenants = []string{"shop"} })
	cfg.Secret, cfg.Now = testSecret, h.clock.Now
	if cfg.Difficulty == 0 {
		cfg.Difficulty = 8 // solved in a few hundred hashes; verifying costs one at any difficulty
	}
	c, err := challenge.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.api, err = api.New(api.Config{Engine: h.engine, Store: h.store, Metrics: h.metrics, Verifier: v, Challenger: c})
	if err != nil {
		t.Fatal(err)
	}
	return h, c
}

// issued is POST /v1/challenge's answer.
type issued struct {
	Token      string `json:"token"`
	Kind       string `json:"kind"`
	Difficulty int    `json:"difficulty"`
	ExpiresAt  string `json:"expires_at"`
	SolverURL  string `json:"solver_url"`
	SiteKey    string `json:"site_key"`
}

func (h *harness) issueChallenge(t *testing.T, body string, header ...string) issued {
	t.Helper()
	res := h.do(t, http.MethodPost, "/v1/challenge", "application/json", body, header...)
	if res.status != http.StatusOK || res.specErr != nil {
		t.Fatalf("POST /v1/challenge %s: %d %s (spec: %v)", body, res.status, res.body, res.specErr)
	}
	var out issued
	if err := json.Unmarshal(res.body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// verifyChallenge posts body to /v1/challenge/verify and returns solved
// and reason, failing the test on anything but a 200.
func (h *harness) verifyChallenge(t *testing.T, body map[string]any, header ...string) (bool, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	res := h.do(t, http.MethodPost, "/v1/challenge/verify", "application/json", string(b), header...)
	if res.status != http.StatusOK || res.specErr != nil {
		t.Fatalf("verify %s: %d %s (spec: %v)", b, res.status, res.body, res.specErr)
	}
	var out struct {
		Solved bool   `json:"solved"`
		Reason string `json:"reason"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil {
		t.Fatal(err)
	}
	return out.Solved, out.Reason
}

// nonceFor finds a nonce for an issued challenge, as the browser does.
func nonceFor(t *testing.T, ch issued) string {
	t.Helper()
	for n := uint64(0); n < 1<<24; n++ {
		if challenge.LeadingZeroBits(challenge.WorkHash(ch.Token, n)) >= ch.Difficulty {
			return strconv.FormatUint(n, 10)
		}
	}
	t.Fatal("no nonce")
	return ""
}

func TestChallenge_AnIssuedChallengeVerifiesOnceOverHTTP(t *testing.T) {
	h, _ := challengeHarness(t, challenge.Config{TTL: time.Minute}, nil)
	ch := h.issueChallenge(t, `{}`)
	if ch.Kind != "pow" || ch.Difficulty != 8 || ch.SolverURL != "/v1/challenge/solver.js" || ch.SiteKey != "" {
		t.Fatalf("issued %+v", ch)
	}
	if exp, err := time.Parse(time.RFC3339Nano, ch.ExpiresAt); err != nil || !exp.Equal(h.clock.Now().Add(time.Minute)) {
		t.Fatalf("expires_at %q, want a minute from now", ch.ExpiresAt)
	}
	sol := map[string]any{"token": ch.Token, "nonce": nonceFor(t, ch)}
	if solved, reason := h.verifyChallenge(t, sol); !solved || reason != "solved" {
		t.Fatalf("first verify: %v %s", solved, reason)
	}
	if solved, reason := h.verifyChallenge(t, sol); solved || reason != "replayed" {
		t.Fatalf("the same solution again: %v %s, want replayed", solved, reason)
	}
	late := h.issueChallenge(t, `{"kind":"pow"}`)
	h.clock.Advance(time.Minute)
	if solved, reason := h.verifyChallenge(t, map[string]any{"token": late.Token, "nonce": nonceFor(t, late)}); solved || reason != "expired" {
		t.Fatalf("after its expiry: %v %s, want expired", solved, reason)
	}
}

func TestChallenge_BadInputIsAProblemAndSpendsNothing(t *testing.T) {
	h, _ := challengeHarness(t, challenge.Config{}, nil)
	ch := h.issueChallenge(t, `{}`)
	nonce := nonceFor(t, ch)
	tests := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"issue: an unknown kind", "/v1/challenge", `{"kind":"captcha"}`, 400, "kind"},
		{"issue: a provider not configured", "/v1/challenge", `{"kind":"turnstile"}`, 400, "kind"},
		{"issue: an unknown key", "/v1/challenge", `{"difficulty":1}`, 400, ""},
		{"issue: no body", "/v1/challenge", ``, 400, ""},
		{"verify: nothing", "/v1/challenge/verify", `{}`, 400, "token"},
		{"verify: no nonce", "/v1/challenge/verify", `{"token":"` + ch.Token + `"}`, 400, "nonce"},
		{"verify: a signed nonce", "/v1/challenge/verify", `{"token":"` + ch.Token + `","nonce":"+` + nonce + `"}`, 400, "nonce"},
		{"verify: a nonce as a number", "/v1/challenge/verify", `{"token":"` + ch.Token + `","nonce":` + nonce + `}`, 400, "nonce"},
		{"verify: a token cut short", "/v1/challenge/verify", `{"token":"` + ch.Token[1:] + `","nonce":"` + nonce + `"}`, 400, "token"},
		{"verify: a response without provider", "/v1/challenge/verify", `{"response":"abc"}`, 400, "provider"},
		{"verify: proof of work as a provider", "/v1/challenge/verify", `{"provider":"pow","response":"abc"}`, 400, "provider"},
		{"verify: a provider not configured", "/v1/challenge/verify", `{"provider":"hcaptcha","response":"abc"}`, 400, "provider"},
		{"verify: a bad remote_ip", "/v1/challenge/verify", `{"token":"` + ch.Token + `","nonce":"` + nonce + `","remote_ip":"203.0.113.7:443"}`, 400, "remote_ip"},
		{"verify: a duplicate key", "/v1/challenge/verify", `{"token":"` + ch.Token + `","nonce":"` + nonce + `","nonce":"1"}`, 400, ""},
		{"verify: a body over 8 KiB", "/v1/challenge/verify", `{"response":"` + strings.Repeat("a", 9000) + `"}`, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := h.do(t, http.MethodPost, tt.path, "application/json", tt.body)
			if res.status != tt.status {
				t.Fatalf("status %d %s, want %d", res.status, res.body, tt.status)
			}
			if got := res.json(t)["field"]; tt.field != "" && got != tt.field {
				t.Fatalf("field %v, want %s", got, tt.field)
			}
		})
	}
	if res := h.do(t, http.MethodPost, "/v1/challenge/verify", "text/plain", `{}`); res.status != http.StatusUnsupportedMediaType {
		t.Fatalf("text/plain: %d", res.status)
	}
	if solved, reason := h.verifyChallenge(t, map[string]any{"token": ch.Token, "nonce": nonce}); !solved {
		t.Fatalf("after the bad ones, the solution: %v %s", solved, reason)
	}
}

func TestChallenge_ATenantsChallengeDoesNotVerifyForAnother(t *testing.T) {
	key := auth.SigningKey{ID: "k", Alg: "HS256", Secret: []byte("0123456789abcdef0123456789abcdef")}
	v, err := auth.New(auth.Config{Audience: "tollgate", Keys: []auth.Key{{ID: "k", Alg: "HS256", Secret: key.Secret, Tenants: []string{"shop", "bank"}}},
		Tenants: []auth.Tenant{{Name: "shop", Issuer: "iss"}, {Name: "bank", Issuer: "iss2"}}})
	if err != nil {
		t.Fatal(err)
	}
	bearer := func(iss, tenant string, scopes ...auth.Scope) []string {
		tok, err := auth.Sign(key, iss, "tollgate", tenant, "app", scopes, time.Minute, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return []string{"Authorization", "Bearer " + tok}
	}
	h, _ := challengeHarness(t, challenge.Config{}, v)
	shop, bank := bearer("iss", "shop", auth.ScopeVerdicts), bearer("iss2", "bank", auth.ScopeVerdicts)
	if res := h.do(t, http.MethodPost, "/v1/challenge", "application/json", `{}`); res.status != http.StatusUnauthorized {
		t.Fatalf("no token: %d, want 401", res.status)
	}
	if res := h.do(t, http.MethodPost, "/v1/challenge", "application/json", `{}`, bearer("iss", "shop", auth.ScopeAdminRead)...); res.status != http.StatusForbidden {
		t.Fatalf("an admin:read token: %d, want 403", res.status)
	}
	ch := h.issueChallenge(t, `{}`, shop...)
	sol := map[string]any{"token": ch.Token, "nonce": nonceFor(t, ch)}
	if solved, reason := h.verifyChallenge(t, sol, bank...); solved || reason != "invalid" {
		t.Fatalf("shop's challenge verified by bank: %v %s, want invalid", solved, reason)
	}
	if solved, _ := h.verifyChallenge(t, sol, shop...); !solved {
		t.Fatal("shop's challenge verified by shop: not solved")
	}
}

func TestChallenge_AProviderThatAnswersGarbageFailsClosed(t *testing.T) {
	answer := `{"success":true}`
	stand := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("secret") != "turnstile-secret" || r.PostForm.Get("remoteip") != "203.0.113.7" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Write([]byte(answer))
	}))
	t.Cleanup(stand.Close)
	h, _ := challengeHarness(t, challenge.Config{Providers: []challenge.ProviderConfig{{Kind: challenge.Turnstile,
		SiteKey: "0x4AAAAAAA-site", Secret: "turnstile-secret", VerifyURL: stand.URL}}}, nil)
	if ch := h.issueChallenge(t, `{"kind":"turnstile"}`); ch.SiteKey != "0x4AAAAAAA-site" || ch.Difficulty != 0 {
		t.Fatalf("issued %+v", ch)
	}
	sol := map[string]any{"provider": "turnstile", "response": "0.abc", "remote_ip": "203.0.113.7"}
	if solved, reason := h.verifyChallenge(t, sol); !solved {
		t.Fatalf("success: %v %s", solved, reason)
	}
	if solved, reason := h.verifyChallenge(t, sol); solved || reason != "replayed" {
		t.Fatalf("the response again: %v %s, want replayed", solved, reason)
	}
	answer = `<html>oops</html>`
	if solved, reason := h.verifyChallenge(t, map[string]any{"provider": "turnstile", "response": "0.def", "remote_ip": "203.0.113.7"}); solved || reason != "provider_unavailable" {
		t.Fatalf("garbage: %v %s, want provider_unavailable", solved, reason)
	}
}

func TestChallenge_ServerWithoutAChallengerAnswersNotFound(t *testing.T) {
	h := newHarness(t)
	if res := h.do(t, http.MethodPost, "/v1/challenge", "application/json", `{}`); res.status != http.StatusNotFound {
		t.Errorf("issue: %d %s, want 404", res.status, res.body)
	}
	if res := h.do(t, http.MethodPost, "/v1/challenge/verify", "application/json", `{"provider":"turnstile","response":"x"}`); res.status != http.StatusNotFound {
		t.Errorf("verify: %d %s, want 404", res.status, res.body)
	}
	// The solver is static: served whether or not this server issues.
	res := h.do(t, http.MethodGet, "/v1/challenge/solver.js", "", "")
	if res.status != http.StatusOK || !strings.Contains(string(res.body), "crypto.subtle.digest") ||
		!strings.HasPrefix(res.header.Get("Content-Type"), "text/javascript") || res.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("solver.js: %d %q", res.status, res.header)
	}
}

// FuzzVerifyChallengeBody: whatever the body, POST /v1/challenge/verify
// answers as openapi.yaml says, never a 500, and solves nothing: no body
// made without the server's secret holds a solution.
func FuzzVerifyChallengeBody(f *testing.F) {
	f.Add(`{}`)
	f.Add(`{"token":"AQEIAAABm47hV4BNlH0w0ZVqkQ0n2tVxsLEcX1yBC3fUqt8ScqzQ9Ye4Ow","nonce":"0"}`)
	f.Add(`{"provider":"turnstile","response":"x","remote_ip":"::1"}`)
	f.Add(`{"nonce":"18446744073709551615","token":null}`)
	f.Add(`[]`)
	f.Fuzz(func(t *testing.T, body string) {
		h, _ := challengeHarness(t, challenge.Config{}, nil)
		res := h.do(t, http.MethodPost, "/v1/challenge/verify", "application/json", body)
		switch res.status {
		case http.StatusOK:
			if m := res.json(t); m["solved"] != false {
				t.Fatalf("%s solved: %s", body, res.body)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%s: %d %s", body, res.status, res.body)
		}
	})
}
