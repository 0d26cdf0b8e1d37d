package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const testWebhookSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

func webhookSecretFile(t *testing.T, secret string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "webhook-secret")
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParse_Webhooks(t *testing.T) {
	f := webhookSecretFile(t, testWebhookSecret)
	cfg, err := Parse([]byte(`
webhooks:
  max_age: 2h
  endpoints:
    - name: security
      url: https://hooks.example.com/tollgate
      secret_file: ` + f + `
      types: [login.new_device, account.under_attack]
      rate_per_second: 5
      burst: 10
    - name: local
      tenant: default
      url: http://127.0.0.1:9000/events
      secret_file: ` + f + `
`))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.Webhooks
	if w == nil || len(w.Endpoints) != 2 || w.MaxAge != 2*time.Hour || w.Timeout != 10*time.Second {
		t.Fatalf("webhooks = %+v", w)
	}
	e := w.Endpoints[0]
	if e.Name != "security" || e.Secret != testWebhookSecret || len(e.Types) != 2 || e.RatePerSecond != 5 || e.Burst != 10 || e.Tenant != "default" {
		t.Errorf("endpoint 0 = %+v", e)
	}
	if w.Endpoints[1].Tenant != "default" {
		t.Errorf("endpoint 1's tenant = %q", w.Endpoints[1].Tenant)
	}
	if cfg, err := Parse([]byte("listen: 127.0.0.1:9\n")); err != nil || cfg.Webhooks != nil {
		t.Errorf("no webhooks section: %v, %+v", err, cfg.Webhooks)
	}
}

// TestParse_WebhooksMistakes: each mistake is an *Error naming its path in
// the file, its line, and what to write instead; the identifiers events
// carry never go to a non-loopback address in clear.
func TestParse_WebhooksMistakes(t *testing.T) {
	good := webhookSecretFile(t, testWebhookSecret)
	for _, tt := range []struct {
		name, endpoint, want string
	}{
		{"events in clear over the network", "url: http://hooks.example.com/x\n      secret_file: " + good, "line 4: webhooks.endpoints[sec].url: \"http://hooks.example.com/x\": http only to a loopback address"},
		{"no scheme", "url: hooks.example.com/x\n      secret_file: " + good, "line 4: webhooks.endpoints[sec].url"},
		{"credentials in the URL", "url: https://u:p@hooks.example.com/x\n      secret_file: " + good, "without credentials"},
		{"a secret in the config itself", "url: https://h.example/x\n      secret: " + testWebhookSecret, `line 5: webhooks.endpoints[0]: unknown field "secret"`},
		{"no secret", "url: https://h.example/x", "line 3: webhooks.endpoints[sec].secret_file is required"},
		{"a secret without whsec_", "url: https://h.example/x\n      secret_file: " + webhookSecretFile(t, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), `must start "whsec_"`},
		{"a short secret", "url: https://h.example/x\n      secret_file: " + webhookSecretFile(t, "whsec_c2hvcnQ="), "the key is 5 bytes; at least 24"},
		{"a misspelt type", "url: https://h.example/x\n      secret_file: " + good + "\n      types: [login.new_devise]", `line 6: webhooks.endpoints[sec].types[0]: "login.new_devise" is not an event type; did you mean "login.new_device"?`},
		{"a negative rate", "url: https://h.example/x\n      secret_file: " + good + "\n      rate_per_second: -1", "line 6: webhooks.endpoints[sec].rate_per_second must be between"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte("webhooks:\n  endpoints:\n    - name: sec\n      " + tt.endpoint + "\n"))
			var ce *Error
			if !errors.As(err, &ce) || ce.Line == 0 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v (%T), want an *Error with a line holding %q", err, err, tt.want)
			}
		})
	}
	_, err := Parse([]byte("webhooks:\n  endpoints:\n    - {name: a, url: 'https://h.example/x', secret_file: " + good + "}\n    - {name: a, url: 'https://h.example/y', secret_file: " + good + "}\n"))
	if err == nil || !strings.Contains(err.Error(), `"a" names two endpoints`) {
		t.Errorf("two endpoints named alike: %v", err)
	}
	_, err = Parse([]byte("webhooks:\n  endpoints:\n    - {name: a, tenant: acme, url: 'https://h.example/x', secret_file: " + good + "}\n"))
	if err == nil || !strings.Contains(err.Error(), `line 3: webhooks.endpoints[a].tenant: "acme" is not a tenant of this server`) {
		t.Errorf("an endpoint for a tenant the server does not serve: %v", err)
	}
	if _, err := Parse([]byte("webhooks:\n  max_age: 24h\n")); err == nil || !strings.Contains(err.Error(), "at least one endpoint") {
		t.Errorf("no endpoint: %v", err)
	}
}

// FuzzParse_Webhooks: no config file panics the parser, and one it accepts
// has only endpoints whose URL keeps identifiers off the network in clear
// and whose secret is a whsec_ key of at least 24 bytes.
func FuzzParse_Webhooks(f *testing.F) {
	secret := filepath.Join(f.TempDir(), "s")
	if err := os.WriteFile(secret, []byte(testWebhookSecret), 0o600); err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		"webhooks:\n  endpoints:\n    - name: a\n      url: https://h.example/x\n      secret_file: " + secret + "\n",
		"webhooks:\n  max_age: 1h\n  timeout: 1s\n  endpoints:\n    - {name: b, url: 'http://127.0.0.1:9/x', secret_file: " + secret + ", types: [otp.budget], rate_per_second: 1, burst: 1}\n",
		"webhooks:\n  endpoints:\n    - {name: c, url: 'http://[::1]:9/x', secret_file: " + secret + ", tenant: default}\n",
		"webhooks:\n  endpoints: []\n",
		"webhooks: {endpoints: [{name: d, url: 'http://10.0.0.1/x', secret_file: " + secret + "}]}\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data string) {
		cfg, err := Parse([]byte(data))
		if err != nil || cfg.Webhooks == nil {
			return
		}
		for _, e := range cfg.Webhooks.Endpoints {
			if err := checkWebhookURL(e.URL); err != nil {
				t.Errorf("accepted endpoint %q with URL %q: %v", e.Name, e.URL, err)
			}
			if err := CheckWebhookSecret(e.Secret); err != nil {
				t.Errorf("accepted endpoint %q with a bad secret: %v", e.Name, err)
			}
			if e.Tenant == "" {
				t.Errorf("accepted endpoint %q without a tenant", e.Name)
			}
		}
	})
}
