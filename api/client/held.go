package client

import (
	"context"
	"net/url"
	"strconv"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// HeldQuery selects a page of held subjects: Flow and Kind ("account" or
// "ip") narrow it, Cursor is the previous page's Next, Limit is 1 to 1000
// (0 for tollgate's 100). Zero fields are left out.
type HeldQuery struct {
	Flow, Kind, Cursor string
	Limit              int
}

// Held lists a page of the subjects held back now (the accounts in backoff,
// the addresses over a limit), with their identifiers, from tollgate's
// held-subjects index; an error with status 404 while the index is off.
// With auth configured, the token needs the admin:read scope.
func (c *Client) Held(ctx context.Context, q HeldQuery) (wire.HeldList, error) {
	v := url.Values{}
	for k, s := range map[string]string{"flow": q.Flow, "kind": q.Kind, "cursor": q.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	path := "/v1/admin/held"
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	var l wire.HeldList
	if err := c.call(ctx, "held", path, nil, &l); err != nil {
		return wire.HeldList{}, err
	}
	return l, nil
}

// ResetHeld frees held subjects of a flow in one call: those named in
// req.Subjects, or every one the index lists (of req.Kind); with
// req.DryRun it only counts them. tollgate writes an audit line with
// req.Reason. With auth configured, the token needs the admin:write scope.
func (c *Client) ResetHeld(ctx context.Context, req wire.HeldResetRequest) (wire.HeldReset, error) {
	var r wire.HeldReset
	if err := c.call(ctx, "reset-held", "/v1/admin/reset-held", req, &r); err != nil {
		return wire.HeldReset{}, err
	}
	return r, nil
}
