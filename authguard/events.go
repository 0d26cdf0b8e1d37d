package authguard

import (
	"time"

	"github.com/tollgate-auth/tollgate/spraydetect"
)

// Source says where the state behind a verdict came from.
type Source uint8

const (
	// SourceStore: the configured store answered.
	SourceStore Source = iota
	// SourceFallback: the store failed and a fail-open flow answered from the
	// local fallback store.
	SourceFallback
	// SourceNone: no store answered (the verdict is the fail-closed one, or
	// a shed call's), or none was asked (a report of an attempt shadow mode
	// refused).
	SourceNone
	// SourceRecall: the process was flooded, and what the store last
	// answered for the call's keys (the recall) refuses it: answered
	// without the store.
	SourceRecall
)

func (s Source) String() string { return [...]string{"store", "fallback", "none", "recall"}[s] }

// AttemptState says whether a report settled the attempt of a check. A
// report that settles none is counted on its own: its check already charged
// the attempt as a failure, so a failure is counted twice and a success
// refunds nothing. (A report whose token is malformed, forged, or issued
// for another tenant, flow or account is refused with an InputError and
// decides nothing, so no Event says so.)
type AttemptState uint8

const (
	// AttemptSettled: a report with a valid attempt token; also the zero
	// value of a check's or a send's Event.
	AttemptSettled AttemptState = iota
	// AttemptMissing: the report carried no attempt token.
	AttemptMissing
	// AttemptExpired: the report's token was issued for this call but is
	// past its flow's AttemptTTL.
	AttemptExpired
)

func (a AttemptState) String() string { return [...]string{"settled", "missing", "expired"}[a] }

// Event describes one decided call. It holds no identifier.
type Event struct {
	// Call is "check", "report" or "send".
	Call string
	// Channel is a send's channel; zero for a check or report.
	Channel Channel
	// Region is a send's phone destination's region ("GB"), the only part
	// of a destination an Event carries; empty otherwise.
	Region string
	// Price is what a send's code costs (SendPolicy.Prices), spent when
	// the answer is Proceed; zero otherwise.
	Price int
	// Flow is the flow's name.
	Flow string
	// Answer is the verdict returned to the caller.
	Answer Verdict
	// Computed is the verdict the policy computed; it differs from Answer
	// only in shadow mode.
	Computed Verdict
	// Source says which store answered.
	Source Source
	// StoreErr is the configured store's error, if it failed.
	StoreErr error
	// StoreDuration is how long the configured store took to answer or
	// fail; zero when it was not asked.
	StoreDuration time.Duration
	// Tenant is the call's tenant.
	Tenant string
	// Outcome is a report's outcome; zero for a check or send.
	Outcome Outcome
	// Attempt says whether a report settled its check's attempt, or was
	// counted on its own (missing or expired token); AttemptSettled for a
	// check or send.
	Attempt AttemptState
	// Subjects are the call's subjects as keyed hashes; nil unless
	// Config.RecordSubjects.
	Subjects *EventSubjects
}

// EventSubjects are a call's subjects as the keyed hashes the store keys
// them by (under the tenant's secret), for a decision log that a team can
// replay against another policy: they tell the same subject apart from
// another and nothing more. Empty strings are parts the call did not have.
type EventSubjects struct {
	// Account is the account's hash.
	Account string
	// IP is the address's hash as an IPv4 /32 or an IPv6 /64 (a 6to4 or
	// Teredo address as the IPv4 it embeds); IP56 and IP48 are its wider
	// IPv6 prefixes' ("" for IPv4). IPv6 says which family.
	IP, IP56, IP48 string
	IPv6           bool
	// Fingerprint is the password fingerprint's hash.
	Fingerprint string
	// Device is the id of the call's valid device token (a random id
	// tollgate made, no identifier); Issued the id of the device token a
	// success report returned.
	Device, Issued string
	// Attempt is the id of the attempt a check's proceed reserved, or of
	// the attempt a report settled (empty for a report without a valid
	// attempt token).
	Attempt string
	// Destination and DestinationPrefix are a send's or verification's
	// destination and its block, hashed.
	Destination, DestinationPrefix string
}

// record is what an Event says of the call's subjects: the hashes the store
// keys them by, whether or not the call's rules counted them (an
// allow-listed address's too), so that a replay can apply other rules.
func (e *Engine) record(s *subjects, device, attempt string) *EventSubjects {
	r := &EventSubjects{Account: s.account, Fingerprint: s.fp, Device: device, Attempt: attempt,
		Destination: s.dest, DestinationPrefix: s.destPrefix}
	if s.addr.IsValid() {
		h := e.hasher(s.tenant)
		p := spraydetect.Grouping{IPv6Bits: 64}.Prefix(s.addr)
		r.IP, r.IPv6 = h.subject(s.tenant, "ip", p.String()), p.Addr().Is6()
		if r.IPv6 {
			for _, w := range []struct {
				bits int
				out  *string
			}{{56, &r.IP56}, {48, &r.IP48}} {
				if wp, ok := spraydetect.WidePrefix(s.addr, w.bits); ok {
					*w.out = h.subject(s.tenant, "ip", wp.String())
				}
			}
		}
	}
	return r
}
