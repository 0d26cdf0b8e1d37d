package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/tollgate-auth/tollgate/breached/hibp"
)

// DefaultBreachedTimeout bounds a Breached call unless
// Config.BreachedTimeout says otherwise. A range answer is a few KiB from
// tollgate's memory (or its upstream's cache); a second is room for a slow
// upstream, while a tollgate that does not answer delays a login by at most
// that, since the answer is then "not known to be breached".
const DefaultBreachedTimeout = time.Second

// maxRangeBytes caps what is read of a range answer: HIBP's ranges hold
// well under 2,000 lines of 40 bytes.
const maxRangeBytes = 256 << 10

// Breached reports whether password is in the breached-password corpus
// tollgate serves, by k-anonymity: only the first 5 hex digits of the
// password's SHA-1 leave this process (GET /v1/breached/{prefix}); the
// answer lists the suffixes of every corpus password with that prefix,
// padded to one size, and the match is made here. Neither the password nor
// its hash is sent anywhere, and tollgate cannot tell which of the range's
// passwords was typed.
//
// It is best-effort: any error (tollgate down, slow past
// Config.BreachedTimeout, an answer other than 200 such as 404 breached-off
// when tollgate has no corpus) returns false with the error, for the log.
// Never fail a login for it: report breached false and go on.
func (c *Client) Breached(ctx context.Context, password string) (bool, error) {
	prefix, suffix := hibp.Hash(password)
	body, err := c.rangeOf(ctx, prefix)
	if err != nil {
		return false, err
	}
	return hibp.Count(body, suffix) > 0, nil
}

// rangeOf fetches the range of prefix.
func (c *Client) rangeOf(ctx context.Context, prefix string) ([]byte, error) {
	const op = "breached"
	if c.breachedTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.breachedTimeout)
		defer cancel()
	}
	token := c.token
	if c.source != nil {
		var err error
		if token, err = c.source(ctx); err != nil {
			return nil, transportError(ctx, op, "no bearer token from the token source", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/v1/breached/"+prefix, nil)
	if err != nil { // the base URL was checked by New
		return nil, errors.New("client: breached: " + err.Error())
	}
	h := req.Header
	h.Set("Accept", "text/plain, application/problem+json")
	h.Set("User-Agent", c.agent)
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		// The URL, which names the prefix, stays out of the message: a
		// log line should not narrow down which password was typed.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, transportError(ctx, op, "tollgate does not answer", err)
	}
	defer func() {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxRangeBytes))
		_ = res.Body.Close()
	}()
	if res.StatusCode != http.StatusOK {
		return nil, problemError(op, res)
	}
	b, err := io.ReadAll(io.LimitReader(res.Body, maxRangeBytes+1))
	if err != nil {
		return nil, transportError(ctx, op, "reading the answer", err)
	}
	if len(b) > maxRangeBytes {
		return nil, &callError{op: op, kind: ErrUnavailable, msg: "the answer is too large"}
	}
	return b, nil
}
