package authguard

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Notice is something the owner of a subject or a security team should
// hear of: a sign-in from a new device, an account under attack, an address
// escalated to a CAPTCHA, a pumping hold, a spend budget reached, an
// administrator's reset, the store failing or answering again. The engine
// hands it to Config.Notifier in memory, after the verdict is decided; it
// never logs or stores Subject or Ref.
type Notice struct {
	// Type is one of the Notice* constants.
	Type   string
	Tenant string
	Flow   string
	// Rule is the rule that decided, when one did.
	Rule string
	// Reason is a short machine reason: "backoff",
	// "failures_over_threshold", "captcha", "low_conversion",
	// "budget_captcha", "budget_deny", "no_device_token", "admin_reset",
	// "password_changed", "second_factor", "breached_password",
	// or a store error's kind ("timeout", "unavailable", "full", ...) and
	// "answering" for store.recovered.
	Reason string
	// Subject is the account or destination as the caller sent it in this
	// call, unnormalised; "" when none (never an IP address).
	Subject string
	// Ref is the caller's opaque ref from this call (CheckRequest.Ref), if
	// any.
	Ref  string
	Time time.Time
	// Details are small extra facts: "failures", "delay_ms", "region",
	// "prefix_bits", "shadow", "keys", "fallback", "sign_ins", "reasons",
	// "step_ups", "outcome", "reports". Never an identifier.
	Details map[string]any
	// Coalesce is a keyed hash naming the tenant, flow, type and subject
	// (the normalised one, so that every spelling of an account shares
	// it), for de-duplication; "" for a notice that is never coalesced.
	Coalesce string
	// Window is how long notices of one Coalesce key are coalesced.
	Window time.Duration
}

// Notifier receives notices. Notify must return at once (no I/O: queue the
// notice and deliver it elsewhere); it is called on the request's
// goroutine, after the verdict is decided, possibly from many goroutines
// at once. Each notice's Details map is new and the engine never touches
// it again: the notifier may keep it.
type Notifier interface{ Notify(Notice) }

// The notice types.
const (
	// NoticeNewDevice: a success report without a valid device token of the
	// account ("was this you?").
	NoticeNewDevice = "login.new_device"
	// NoticeUnderAttack: a failure report found the account's backoff
	// counter holding it back (or past NoticePolicy.UnderAttackFailures).
	NoticeUnderAttack = "account.under_attack"
	// NoticeReset: an administrator reset an account (Engine.Reset,
	// reason "admin_reset"), or a password_changed report cleared its
	// counters (reason "password_changed").
	NoticeReset = "account.reset"
	// NoticeIPEscalated: an address or prefix reached a CAPTCHA rule.
	NoticeIPEscalated = "ip.escalated"
	// NoticePumpingHold: a conversion rule holds a country or a block of
	// numbers for low conversion.
	NoticePumpingHold = "otp.pumping_hold"
	// NoticeBudget: a spend budget (a rule with PriceCost) passed its
	// CAPTCHA or deny level.
	NoticeBudget = "otp.budget"
	// NoticeStoreDegraded: the store failed a call after answering (the
	// flow answers from its fail mode: the fallback or fail-closed).
	NoticeStoreDegraded = "store.degraded"
	// NoticeStoreRecovered: the store answered again after failing.
	NoticeStoreRecovered = "store.recovered"
	// NoticeStepUp: a success report answered StepUp (Details "reasons":
	// why; "step_ups": 1 plus those held back by the cap).
	NoticeStepUp = "login.step_up"
	// NoticeBreachedPassword: a report of any outcome said the password is
	// breached (ReportRequest.Breached), so that the owner can be told to
	// change it (Details "outcome", and "reports": 1 plus those held back).
	NoticeBreachedPassword = "login.breached_password"
)

// NoticeTypes lists every notice type, in a fixed order.
var NoticeTypes = []string{
	NoticeNewDevice, NoticeUnderAttack, NoticeReset, NoticeIPEscalated,
	NoticePumpingHold, NoticeBudget, NoticeStoreDegraded, NoticeStoreRecovered,
	NoticeStepUp, NoticeBreachedPassword,
}

// noticeBit is a notice type's bit in NoticePolicy.set.
func noticeBit(typ string) uint16 {
	if i := slices.Index(NoticeTypes, typ); i >= 0 {
		return 1 << i
	}
	return 0
}

// NoticePolicy says which notices a flow emits, and when.
type NoticePolicy struct {
	// Emit lists the notice types (NoticeTypes) the flow emits. Empty emits
	// none; the built-in policy's flows emit the ones docs/design.md lists.
	// login.new_device and account.under_attack are for flows of checks
	// and reports, otp.pumping_hold and otp.budget for send flows. A flow
	// without a device rule emits no login.new_device (it cannot tell a
	// known device from a new one), and one without a backoff rule on the
	// account no account.under_attack: a flow made from a template that
	// switches such a rule off keeps the template's list.
	Emit []string
	// UnderAttackFailures, when above zero, makes account.under_attack
	// wait until the account's backoff counter holds that many failures
	// (reason "failures_over_threshold") instead of for the counter to
	// hold the account back at all (reason "backoff"). The counter forgets
	// after its rule's ForgetAfter without failures: that is its window.
	// The default is 0.
	UnderAttackFailures int
	// Window is how long notices of one subject and type are coalesced:
	// each instance emits at most one per Window (Notice.Coalesce names
	// them, so a receiver can de-duplicate across instances), between
	// MinNoticeWindow and MaxNoticeWindow. The default is
	// DefaultNoticeWindow (1h).
	Window time.Duration

	set uint16 // the bits of Emit
}

// Bounds of NoticePolicy.
const (
	DefaultNoticeWindow = time.Hour
	MinNoticeWindow     = time.Minute
	MaxNoticeWindow     = 7 * 24 * time.Hour
	// MaxUnderAttackFailures bounds NoticePolicy.UnderAttackFailures.
	MaxUnderAttackFailures = 1_000_000
	// MaxNewDeviceNotices is how many login.new_device notices one account
	// gets per NoticePolicy.Window on each instance. Past it the sign-ins
	// are counted, not told: the account's first notice of a later window
	// tells of them in its "sign_ins" detail. An attacker who signs in to
	// an account of their own thousands of times so makes a few notices,
	// not thousands queued ahead of another account's alert; an owner's
	// own few new devices in a window are each told.
	MaxNewDeviceNotices = 3
)

// Emits says whether the flow emits notices of typ.
func (np *NoticePolicy) Emits(typ string) bool {
	b := noticeBit(typ)
	return b != 0 && np.set&b != 0
}

// compileNotices validates the flow's NoticePolicy and fills in its default.
func (f *Flow) compileNotices() error {
	np := &f.Notices
	np.set = 0
	for _, typ := range np.Emit {
		b := noticeBit(typ)
		if b == 0 {
			return badSentence("Notices.Emit", "%q is not a notice type (they are %s)", typ, strings.Join(NoticeTypes, ", "))
		}
		np.set |= b
	}
	if np.Window == 0 {
		np.Window = DefaultNoticeWindow
	}
	if np.Window < MinNoticeWindow || np.Window > MaxNoticeWindow {
		return bad("Notices.Window", "must be between %v and %v, not %v", MinNoticeWindow, MaxNoticeWindow, np.Window)
	}
	if np.UnderAttackFailures < 0 || np.UnderAttackFailures > MaxUnderAttackFailures {
		return bad("Notices.UnderAttackFailures", "must be between 0 (when the account is held back) and %d, not %d", MaxUnderAttackFailures, np.UnderAttackFailures)
	}
	sendOnly, attemptsOnly := []string{NoticePumpingHold, NoticeBudget}, []string{NoticeNewDevice, NoticeUnderAttack, NoticeStepUp, NoticeBreachedPassword}
	for _, typ := range np.Emit {
		switch {
		case f.Kind != Sends && slices.Contains(sendOnly, typ):
			return badSentence("Notices.Emit", "%s is for send flows (kind: send)", typ)
		case f.Kind == Sends && slices.Contains(attemptsOnly, typ):
			return badSentence("Notices.Emit", "%s is for flows of checks and reports, not send flows", typ)
		}
	}
	return nil
}

// accountBackoff says whether the rule is a backoff counter of the account
// alone: the counter account.under_attack watches.
func (r *Rule) accountBackoff() bool {
	return r.Algorithm == Backoff && r.Subject.Parts == PartAccount
}

// MaxRefBytes caps a request's Ref.
const MaxRefBytes = 128

// checkRef validates a request's ref: at most MaxRefBytes of UTF-8 without
// control characters or bidirectional formatting characters. A ref reaches
// the notices' receivers, which show it to people (an alert, a ticket): an
// override (U+202E) or isolate (U+2066) in it would make the rest of the
// line it is shown in read backwards, the subject and event type after it
// too, so it is refused like a line break.
func checkRef(ref string) error {
	if ref == "" {
		return nil
	}
	if len(ref) > MaxRefBytes {
		return &InputError{Field: "ref", Detail: fmt.Sprintf("must be at most %d bytes", MaxRefBytes)}
	}
	if !utf8.ValidString(ref) || strings.IndexFunc(ref, refRefused) >= 0 {
		return &InputError{Field: "ref", Detail: "must be UTF-8 text without control or bidirectional formatting characters"}
	}
	return nil
}

// refRefused reports whether r may not be in a ref: a control character,
// or a bidirectional formatting one (unicode.Bidi_Control: U+061C, U+200E,
// U+200F, U+202A–U+202E and U+2066–U+2069, which Unicode's
// Bidi_Control property lists and UAX #9 acts on).
func refRefused(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) }

// notices is the engine's side of Config.Notifier: the notifier, whether
// the store last failed (for store.degraded and store.recovered), and the
// coalescing keys emitted lately, so that an attack of thousands of calls
// on one subject gives one notice per window on each instance.
type notices struct {
	to Notifier // nil: nothing is emitted

	storeDown atomic.Bool

	mu     sync.Mutex
	recent map[string]noticeWindow // notice key (see admit) → its window
}

// noticeWindow is a notice key's window: when it ends, how many notices it
// let out, and how many it held back past its cap since the last notice
// that went out (the next one tells of them).
type noticeWindow struct {
	until      time.Time
	sent, held int
}

// maxRecentNotices bounds what notices remembers: past it, windows that
// ended are dropped, and unless that frees a quarter of it, everything is
// (a notice may then be emitted again within its window: the receiver
// de-duplicates by Coalesce). Freeing a quarter at least keeps the walk to
// one per 4,096 notices: an attacker who keeps the map full of live keys
// cannot make every notice walk it under the lock.
const maxRecentNotices = 16384

// fresh says whether a notice of key (the tenant, flow, type and the
// subject's hash or store key: no identifier) may be emitted at now, and
// if so starts its window: one notice per key and window.
func (n *notices) fresh(key string, window time.Duration, now time.Time) bool {
	ok, _ := n.admit(key, window, 1, now)
	return ok
}

// admit says whether a notice of key may be emitted at now: the first max
// of a window may, and the first starts the window; later ones are held
// back and counted. held is how many were held back since the last notice
// of key that went out, which this one, when ok, is to tell of. A window
// dropped at the record's cap forgets its count.
func (n *notices) admit(key string, window time.Duration, max int, now time.Time) (ok bool, held int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w, found := n.recent[key]
	if found && now.Before(w.until) {
		if w.sent >= max {
			w.held++
			n.recent[key] = w
			return false, 0
		}
		w.sent++
		held, w.held = w.held, 0
		n.recent[key] = w
		return true, held
	}
	if n.recent == nil {
		n.recent = map[string]noticeWindow{}
	}
	if !found && len(n.recent) >= maxRecentNotices {
		for k, w := range n.recent {
			if !now.Before(w.until) {
				delete(n.recent, k)
			}
		}
		if len(n.recent) > maxRecentNotices*3/4 {
			clear(n.recent)
		}
	}
	n.recent[key] = noticeWindow{until: now.Add(window), sent: 1}
	return true, w.held
}

// storeAnswered records whether the store answered a call of a flow that
// emits store notices, and returns the notice type of a change ("" for
// none).
func (n *notices) storeAnswered(ok bool) string {
	if n.storeDown.Load() == ok && n.storeDown.CompareAndSwap(ok, !ok) {
		if ok {
			return NoticeStoreRecovered
		}
		return NoticeStoreDegraded
	}
	return ""
}
