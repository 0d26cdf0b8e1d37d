package client

import (
	"context"
	"errors"
	"net/http"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// PasswordChange is an account whose password the caller just changed or
// reset, for Client.PasswordChanged.
type PasswordChange struct {
	// Flow is the login flow whose password changed. The default is
	// "login", the built-in login flow.
	Flow string
	// Account is the account as the login checks it (as the end user
	// types it: tollgate folds it as it folds a check's). It is required.
	Account string
	// IP is the address the change was made from. It is required by every
	// flow whose rules count addresses (the built-in login does).
	IP string
	// Ref is your own opaque reference for the end user, passed only to
	// the account.reset notice, as in wire.CheckRequest. The default is
	// empty.
	Ref string
}

// PasswordChanged tells tollgate that p.Account's password was changed or
// reset, once the change has taken effect (after whatever your change asks
// for: the old password, a link, a second factor): a report of outcome
// password_changed with no attempt token. tollgate clears the account's
// counters in the flow and in every flow sharing its device trust (never
// an address's), emits account.reset, and, with the flow's
// revoke_devices_on_password_change, makes every device token issued
// before now count as none. Report only a change you made: tollgate trusts
// it as it trusts a success.
//
// The error is for the caller's log, never for the end user: the change
// has been made, so log it and go on (the owner's counters then clear as
// they decay). errors.Is(err, ErrUnavailable) when tollgate did not
// answer; an *Error when it refused the request (a flow that counts no
// account, or a step-up flow: wire.ProblemInvalidField on "outcome").
// There is no fail mode: nothing is let in or kept out by the answer.
func (c *Client) PasswordChanged(ctx context.Context, p PasswordChange) error {
	flow := p.Flow
	if flow == "" {
		flow = defaultPolicy
	}
	var v wire.Verdict
	return c.verdict(ctx, "report", "/v1/report", wire.ReportRequest{
		Flow: flow, Account: p.Account, IP: p.IP, Outcome: wire.OutcomePasswordChanged, Ref: p.Ref,
	}, &v)
}

// PasswordChanged is Client.PasswordChanged for account on the Guard's
// flow, from r's end user: the address is the one the Guard's checks use
// (GuardConfig.Proxies), never a header a client sets. Call it from the
// handler that changed account's password, with account as your login
// form posts it. The error is for your log, as Client.PasswordChanged's;
// an address the Guard cannot resolve is one, and nothing is sent.
func (g *Guard) PasswordChanged(r *http.Request, account string) error {
	ip := g.proxies.ClientIP(r)
	if !ip.IsValid() {
		return errors.New("client: report: the request has no client address the Guard can use")
	}
	return g.client.PasswordChanged(r.Context(), PasswordChange{Flow: g.flow, Account: account, IP: ip.String()})
}
