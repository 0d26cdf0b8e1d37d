package challenge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// maxSiteverifyAnswer bounds the siteverify answer read: the providers'
// are a few hundred bytes.
const maxSiteverifyAnswer = 64 << 10

// siteverify asks p whether response is valid: ReasonSolved only for a 200
// whose body is a JSON object with "success": true. Anything else the
// provider says is ReasonProviderRejected when it parses and
// ReasonProviderUnavailable when it does not or never comes: the challenge
// fails closed, for a provider that is down would otherwise open the gate
// to everyone.
func (c *Challenger) siteverify(ctx context.Context, p ProviderConfig, response string, remote netip.Addr) Reason {
	form := url.Values{"secret": {p.Secret}, "response": {response}}
	if remote.IsValid() {
		form.Set("remoteip", remote.Unmap().String())
	}
	if p.Kind == HCaptcha {
		// hCaptcha checks that the response was for this site key.
		form.Set("sitekey", p.SiteKey)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ProviderTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.VerifyURL, strings.NewReader(form.Encode()))
	if err != nil {
		return ReasonProviderUnavailable
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	res, err := c.client.Do(req)
	if err != nil {
		return ReasonProviderUnavailable
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return ReasonProviderUnavailable
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxSiteverifyAnswer+1))
	if err != nil || len(body) > maxSiteverifyAnswer {
		return ReasonProviderUnavailable
	}
	return parseSiteverify(body)
}

// parseSiteverify reads a siteverify answer: ReasonSolved when it is a
// JSON object whose success is the boolean true, ReasonProviderRejected
// when success is false, ReasonProviderUnavailable for anything else
// (not JSON, no success, success of another type).
func parseSiteverify(body []byte) Reason {
	// A map, not a struct: encoding/json would match "Success" or
	// "SUCCESS" to a struct's field, and only the documented key counts.
	var answer map[string]json.RawMessage
	if err := json.Unmarshal(body, &answer); err != nil {
		return ReasonProviderUnavailable
	}
	switch string(answer["success"]) {
	case "true":
		return ReasonSolved
	case "false":
		return ReasonProviderRejected
	}
	return ReasonProviderUnavailable
}
