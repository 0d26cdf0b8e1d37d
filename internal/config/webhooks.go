package config

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"

	"net/netip"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// EventTypes are the event types an endpoint's types may name: the
// notices the engine emits.
var EventTypes = authguard.NoticeTypes

var endpointNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// minWebhookKey is the fewest bytes a webhook secret's key may have.
const minWebhookKey = 24

// webhooksConfig checks fw and reads its secret files; on a mistake it
// returns the path in the file it is at.
func webhooksConfig(fw *fileWebhooks) (*Webhooks, string, error) {
	w := &Webhooks{MaxAge: 24 * time.Hour, Timeout: 10 * time.Second}
	if d := time.Duration(fw.MaxAge); d != 0 {
		if d < time.Minute || d > 30*24*time.Hour {
			return nil, "webhooks.max_age", errors.New("must be between 1m and 720h")
		}
		w.MaxAge = d
	}
	if d := time.Duration(fw.Timeout); d != 0 {
		if d < 100*time.Millisecond || d > time.Minute {
			return nil, "webhooks.timeout", errors.New("must be between 100ms and 1m")
		}
		w.Timeout = d
	}
	if len(fw.Endpoints) == 0 {
		return nil, "webhooks.endpoints", errors.New("name at least one endpoint (name, url, secret_file)")
	}
	seen := map[string]bool{}
	for i, fe := range fw.Endpoints {
		// An endpoint's path names it as the line index does (lineIndex.add).
		at := fmt.Sprintf("webhooks.endpoints[%d]", i)
		if fe.Name != "" {
			at = "webhooks.endpoints[" + fe.Name + "]"
		}
		if !endpointNameRE.MatchString(fe.Name) {
			return nil, at + ".name", errors.New("must be 1 to 64 lower-case letters, digits, '-' or '_', starting with a letter or digit")
		}
		if seen[fe.Name] {
			return nil, at + ".name", fmt.Errorf("%q names two endpoints", fe.Name)
		}
		seen[fe.Name] = true
		if err := checkWebhookURL(fe.URL); err != nil {
			return nil, at + ".url", err
		}
		if fe.SecretFile == "" {
			return nil, at + ".secret_file", errors.New("is required: a file holding the endpoint's whsec_ secret")
		}
		data, err := os.ReadFile(fe.SecretFile)
		if err != nil {
			return nil, at + ".secret_file", err
		}
		secret := string(bytes.TrimSpace(data))
		if err := CheckWebhookSecret(secret); err != nil {
			return nil, at + ".secret_file", err
		}
		for j, t := range fe.Types {
			if !slices.Contains(EventTypes, t) {
				return nil, fmt.Sprintf("%s.types[%d]", at, j), fmt.Errorf("%q is not an event type%s (%s)", t, didYouMean(t, EventTypes), strings.Join(EventTypes, ", "))
			}
		}
		if fe.RatePerSecond < 0 || fe.RatePerSecond > 10000 {
			return nil, at + ".rate_per_second", errors.New("must be between 0 (the default, 10) and 10000")
		}
		if fe.Burst < 0 || fe.Burst > 100000 {
			return nil, at + ".burst", errors.New("must be between 0 (the default, 20) and 100000")
		}
		tenant := fe.Tenant
		if tenant == "" {
			tenant = authguard.DefaultTenant
		}
		w.Endpoints = append(w.Endpoints, WebhookEndpoint{Name: fe.Name, Tenant: tenant, URL: fe.URL, Secret: secret,
			Types: fe.Types, RatePerSecond: fe.RatePerSecond, Burst: fe.Burst})
	}
	return w, "", nil
}

// checkWebhookURL accepts an absolute https URL, or http to a loopback
// address: the deliveries carry the account or destination as the caller
// sent it, which must not cross a network in clear.
func checkWebhookURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%q is not an absolute http(s) URL without credentials or fragment", s)
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		host := u.Hostname()
		if host == "localhost" {
			return nil
		}
		if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
			return nil
		}
		return fmt.Errorf("%q: http only to a loopback address (events carry identifiers): use https", s)
	}
	return fmt.Errorf("%q: the scheme must be https (or http to a loopback address)", s)
}

// CheckWebhookSecret checks a Standard Webhooks secret: "whsec_" and the
// key in standard base64, at least 24 bytes of it.
func CheckWebhookSecret(s string) error {
	b64, ok := strings.CutPrefix(s, "whsec_")
	if !ok {
		return errors.New(`must start "whsec_" followed by the key in base64 (e.g. echo "whsec_$(openssl rand -base64 32)")`)
	}
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return errors.New(`the key after "whsec_" is not standard base64`)
	}
	if len(key) < minWebhookKey {
		return fmt.Errorf("the key is %d bytes; at least %d (openssl rand -base64 32)", len(key), minWebhookKey)
	}
	return nil
}

// checkWebhookTenants refuses an endpoint for a tenant the server does not
// serve: the default tenant, or one of auth's tenants.
func checkWebhookTenants(w *Webhooks, a *fileAuth) (string, error) {
	names := []string{authguard.DefaultTenant}
	if a != nil {
		for _, t := range a.Tenants {
			names = append(names, t.Name)
		}
	}
	for _, e := range w.Endpoints {
		if !slices.Contains(names, e.Tenant) {
			return "webhooks.endpoints[" + e.Name + "].tenant", fmt.Errorf("%q is not a tenant of this server%s (%s)", e.Tenant, didYouMean(e.Tenant, names), strings.Join(names, ", "))
		}
	}
	return "", nil
}
