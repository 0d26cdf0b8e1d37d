package authguard

import "errors"

// The engine's notices (Config.Notifier) are worked out after a call's
// verdict, from what the call already holds: its subjects, its plan and
// the store's results. Nothing here calls the store or changes the
// verdict, and with no Notifier none of it runs.

// callNotices are the parts of a call its notices name.
type callNotices struct {
	s *subjects
	// subject is the account or destination as the caller sent it; ref
	// the caller's Ref.
	subject, ref string
	// region is a send's phone destination's region, "" otherwise.
	region string
}

// notify hands n to the notifier, with the call's tenant, flow, ref and
// time, unless this instance emitted a notice of the same
// coalescing key within the flow's window. key names what the notice is
// about for coalescing, as a hash (a subject's hash or a store key, never
// an identifier in clear); "" for a notice that is never coalesced.
func (e *Engine) notify(c *callNotices, n Notice, key string) {
	s := c.s
	n.Tenant, n.Flow, n.Time = s.tenant, s.flow.Name, e.now()
	n.Ref = c.ref
	if s.flow.Mode == Shadow {
		if n.Details == nil {
			n.Details = map[string]any{}
		}
		n.Details["shadow"] = true
	}
	if key != "" {
		// The instance's own record is by the hash the call already has;
		// the HMAC is computed only for a notice that goes out.
		n.Window = s.flow.Notices.Window
		if !e.notices.fresh(s.tenant+"\x00"+s.flow.Name+"\x00"+n.Type+"\x00"+key, n.Window, n.Time) {
			return
		}
		n.Coalesce = e.hasher(s.tenant).subject(s.tenant, "notice", s.flow.Name+"\x00"+n.Type+"\x00"+key)
	}
	e.notices.to.Notify(n)
}

// storeNotice emits store.degraded when the store failed a call after
// answering the last one, and store.recovered when it answered again: on
// every instance at its own change, not coalesced (a receiver that dropped
// a repeat could be left believing the wrong state). A call the store was
// not asked for, or that was shed, tells nothing.
func (e *Engine) storeNotice(c *callNotices, b *batch) {
	f := c.s.flow
	if !f.Notices.Emits(NoticeStoreDegraded) && !f.Notices.Emits(NoticeStoreRecovered) {
		return
	}
	var typ string
	switch {
	case b.err == nil && b.src == SourceStore:
		typ = e.notices.storeAnswered(true)
	case b.err != nil && !errors.Is(b.err, ErrOverloaded):
		typ = e.notices.storeAnswered(false)
	}
	if typ == "" || !f.Notices.Emits(typ) {
		return
	}
	n := Notice{Type: typ, Reason: "answering"}
	if typ == NoticeStoreDegraded {
		n.Reason, n.Details = StoreErrorKind(b.err), map[string]any{"fallback": b.src == SourceFallback}
	}
	e.notify(&callNotices{s: c.s}, n, "")
}

// ruleNotices emits what the results of a call's plan show of rules that
// reached their limit: an address or prefix escalated to a CAPTCHA
// (ip.escalated), a country or block held for low conversion
// (otp.pumping_hold), a spend budget past its level (otp.budget). Each is
// coalesced on the rule's store key, so a flood from one prefix or to one
// country gives one notice per window.
func (e *Engine) ruleNotices(c *callNotices, p *plan, b *batch) {
	f := c.s.flow
	np := &f.Notices
	if np.set&(noticeBit(NoticeIPEscalated)|noticeBit(NoticePumpingHold)|noticeBit(NoticeBudget)) == 0 || b.res == nil {
		return
	}
	for i, m := range p.meta {
		if !m.limits() || i >= len(b.res) || !b.res[i].Over {
			continue
		}
		r := &f.Rules[m.rule]
		key := p.ops[i].StoreKey()
		switch {
		case r.Subject.Parts == PartIP && r.Past == PastCaptcha && np.Emits(NoticeIPEscalated):
			bits := r.Subject.IPBits
			if bits == 0 {
				bits = 32
				if c.s.addr.Is6() && !c.s.addr.Is4In6() {
					bits = f.Grouping.IPv6Bits
					if bits == 0 {
						bits = 64
					}
				}
			}
			e.notify(c, Notice{Type: NoticeIPEscalated, Rule: r.Name, Reason: "captcha",
				Details: map[string]any{"prefix_bits": bits}}, key)
		case r.Algorithm == Conversion && np.Emits(NoticePumpingHold):
			e.notify(c, Notice{Type: NoticePumpingHold, Rule: r.Name, Reason: "low_conversion", Subject: c.subject,
				Details: map[string]any{"subject": r.Subject.String(), "region": c.region}}, key)
		case r.PriceCost && np.Emits(NoticeBudget):
			e.notify(c, Notice{Type: NoticeBudget, Rule: r.Name, Reason: "budget_" + r.Past.String()}, key)
		}
	}
}

// reportNotices emits a report's notices: a success without a valid
// device token of the account (login.new_device, see newDeviceNotice), and
// a failure that found the account's backoff counter holding it back, or
// past the flow's UnderAttackFailures (account.under_attack, coalesced on
// the account's hash, so every spelling of it shares one key).
func (e *Engine) reportNotices(c *callNotices, outcome Outcome, known bool, p *plan, b *batch, sig reportSignals) {
	s, f := c.s, c.s.flow
	np := &f.Notices
	if outcome == Success && !known && !sig.stepUp && s.account != "" && f.device >= 0 && np.Emits(NoticeNewDevice) {
		e.newDeviceNotice(c)
	}
	if sig.stepUp && s.account != "" && np.Emits(NoticeStepUp) {
		e.cappedNotice(c, Notice{Type: NoticeStepUp, Reason: "second_factor", Subject: c.subject,
			Details: map[string]any{"reasons": reasonStrings(sig.reasons)}}, "step_ups")
	}
	if sig.breached && s.account != "" && np.Emits(NoticeBreachedPassword) {
		e.cappedNotice(c, Notice{Type: NoticeBreachedPassword, Reason: "breached_password", Subject: c.subject,
			Details: map[string]any{"outcome": outcome.String()}}, "reports")
	}
	if outcome == Failure && np.Emits(NoticeUnderAttack) && b.res != nil && s.account != "" {
		for i, m := range p.meta {
			r := &f.Rules[m.rule]
			if !m.limits() || !r.accountBackoff() || i >= len(b.res) {
				continue
			}
			res := b.res[i]
			reason := "backoff"
			hit := res.Wait > 0
			if np.UnderAttackFailures > 0 {
				reason, hit = "failures_over_threshold", res.Count >= np.UnderAttackFailures
			}
			if hit {
				e.notify(c, Notice{Type: NoticeUnderAttack, Rule: r.Name, Reason: reason, Subject: c.subject,
					Details: map[string]any{"failures": res.Count, "delay_ms": res.Wait.Milliseconds()}}, s.account)
			}
			break // one counter speaks for the account
		}
	}
	e.ruleNotices(c, p, b)
	e.storeNotice(c, b)
}

// reportSignals are what a report found beside its counters, for its
// notices: whether it was answered StepUp and why, and whether the caller
// said the password is breached.
type reportSignals struct {
	stepUp   bool
	reasons  []Reason
	breached bool
}

// cappedNotice emits n about the call's account as login.new_device is
// emitted: at most MaxNewDeviceNotices per account, type and window on this
// instance, the ones held back told of by the next notice's count detail
// (1 plus those held back).
func (e *Engine) cappedNotice(c *callNotices, n Notice, count string) {
	s, f := c.s, c.s.flow
	ok, held := e.notices.admit(s.tenant+"\x00"+f.Name+"\x00"+n.Type+"\x00"+s.account, f.Notices.Window, MaxNewDeviceNotices, e.now())
	if !ok {
		return
	}
	n.Details[count] = 1 + held
	e.notify(c, n, "")
}

func reasonStrings(rs []Reason) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = string(r)
	}
	return out
}

// newDeviceNotice emits login.new_device for a success without a device
// token of the account: not coalesced, as each is a sign-in its owner
// should hear of, but at most MaxNewDeviceNotices per account and window
// on this instance, so that an attacker's thousands of sign-ins to an
// account of their own are a few notices, not a flood queued ahead of
// another account's alert. Its "sign_ins" detail is 1 plus the sign-ins
// held back since the account's last notice.
func (e *Engine) newDeviceNotice(c *callNotices) {
	s, f := c.s, c.s.flow
	ok, held := e.notices.admit(s.tenant+"\x00"+f.Name+"\x00"+NoticeNewDevice+"\x00"+s.account, f.Notices.Window, MaxNewDeviceNotices, e.now())
	if !ok {
		return
	}
	e.notify(c, Notice{Type: NoticeNewDevice, Rule: f.Rules[f.device].Name, Reason: "no_device_token", Subject: c.subject,
		Details: map[string]any{"sign_ins": 1 + held}}, "")
}

// resetNotice emits account.reset for an administrator's reset of an
// account that deleted keys keys.
func (e *Engine) resetNotice(s *subjects, account, ref string, keys int) {
	if e.notices.to == nil || !s.flow.Notices.Emits(NoticeReset) {
		return
	}
	e.notify(&callNotices{s: s, subject: account, ref: ref}, Notice{Type: NoticeReset, Reason: "admin_reset", Subject: account,
		Details: map[string]any{"keys": keys}}, "")
}
