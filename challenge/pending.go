package challenge

import (
	"context"
	"errors"
	"net/http"
)

// Submission is a request held while its sender solves a challenge: what
// is needed to send it on once solved.
type Submission struct {
	// Method is the request's method, e.g. POST.
	Method string
	// Path is the request's path and query as it was received
	// (r.URL.RequestURI()).
	Path string
	// ContentType is the request's Content-Type header.
	ContentType string
	// Body is the request's body, at most Config.MaxBodyBytes.
	Body []byte
}

// Hold seals s for tenant and keeps it for Config.PendingTTL; it returns
// the handle that redeems it, 22 random URL-safe characters. The store
// holds only the sealed blob under a hash of the handle: neither a dump
// of it nor the page shows the body.
func (c *Challenger) Hold(ctx context.Context, tenant string, s Submission) (string, error) {
	return "", errors.New("challenge: not built yet")
}

// HoldRequest reads r's body (at most Config.MaxBodyBytes, else
// ErrBodyTooLarge) and holds it with r's method, path and content type.
func (c *Challenger) HoldRequest(ctx context.Context, tenant string, r *http.Request) (string, error) {
	return "", errors.New("challenge: not built yet")
}

// Restore returns a copy of r (the solution post) that carries the held
// submission instead: its method, path and query, Content-Type and body,
// with the other headers of r. The caller forwards it.
func Restore(r *http.Request, s Submission) (*http.Request, error) {
	return nil, errors.New("challenge: not built yet")
}
