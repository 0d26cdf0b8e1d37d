package api_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
)

// noticeRecorder is a Notifier that keeps what it is told.
type noticeRecorder struct {
	mu    sync.Mutex
	notes []authguard.Notice
}

func (r *noticeRecorder) Notify(n authguard.Notice) {
	r.mu.Lock()
	r.notes = append(r.notes, n)
	r.mu.Unlock()
}

// refSince returns the ref of a notice from the nth on that holds a rune
// for which bad is true, if any.
func (r *noticeRecorder) refSince(n int, bad func(rune) bool) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, note := range r.notes[n:] {
		if strings.IndexFunc(note.Ref, bad) >= 0 {
			return note.Ref, true
		}
	}
	return "", false
}

func (r *noticeRecorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.notes)
}

// The caller's ref travels from the JSON body to the notice, with the
// account as sent, and into no log line.
func TestNotice_RefFromTheBodyReachesTheNotifierAndNoLog(t *testing.T) {
	notes := &noticeRecorder{}
	h := newHarness(t, withNotifier(notes))
	const account, ref = "Olivia@Example.com", "user-8c1f2e"
	v := h.check(t, map[string]any{"flow": "login", "account": account, "ip": "192.0.2.1", "ref": ref})
	h.report(t, map[string]any{"flow": "login", "account": account, "ip": "192.0.2.1", "outcome": "success", "attempt": v.Attempt, "ref": ref})
	if notes.len() != 1 {
		t.Fatalf("%d notices after a sign-in without a device token, want 1: %+v", notes.len(), notes.notes)
	}
	n := notes.notes[0]
	if n.Type != authguard.NoticeNewDevice || n.Subject != account || n.Ref != ref || n.Flow != "login" {
		t.Errorf("notice %+v, want login.new_device for %q with ref %q", n, account, ref)
	}
	for _, secret := range []string{ref, account, strings.ToLower(account)} {
		if strings.Contains(h.logs.String(), secret) {
			t.Errorf("the logs hold %q", secret)
		}
	}
}

// Mistake: a report with a bad ref. It is refused with a problem and
// tells no one of a new device.
func TestNotice_ReportWithABadRefTellsNothing(t *testing.T) {
	notes := &noticeRecorder{}
	h := newHarness(t, withNotifier(notes))
	before := h.keys()
	res := h.do(t, http.MethodPost, "/v1/report", "application/json",
		`{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"success","ref":"`+strings.Repeat("r", 200)+`"}`)
	if res.status != http.StatusBadRequest || res.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d, content type %q; want a 400 problem", res.status, res.header.Get("Content-Type"))
	}
	if p := res.json(t); p["field"] != "ref" {
		t.Errorf("problem %v, want field ref", p)
	}
	if notes.len() != 0 || len(h.keys()) != len(before) {
		t.Errorf("a refused report emitted %d notices and changed the store", notes.len())
	}
}

// An administrator's reset of an account tells the account.reset notice
// whom it concerns: the ref of the reset's body, as a check's does, and no
// log line holds it.
func TestNotice_AResetsRefReachesItsNotice(t *testing.T) {
	notes := &noticeRecorder{}
	h := newHarness(t, withNotifier(notes))
	const account, ref = "Olivia@Example.com", "user-8c1f2e"
	h.check(t, map[string]any{"flow": "login", "account": account, "ip": "192.0.2.1"})
	res := h.post(t, "/v1/admin/reset", map[string]any{"flow": "login", "account": account, "reason": "ticket 4711", "ref": ref})
	if res.status != http.StatusOK {
		t.Fatalf("reset: %d %s", res.status, res.body)
	}
	notes.mu.Lock()
	defer notes.mu.Unlock()
	var got []authguard.Notice
	for _, n := range notes.notes {
		if n.Type == authguard.NoticeReset {
			got = append(got, n)
		}
	}
	if len(got) != 1 || got[0].Ref != ref || got[0].Subject != account {
		t.Fatalf("reset notices %+v, want one for %q with ref %q", got, account, ref)
	}
	if strings.Contains(h.logs.String(), ref) {
		t.Error("a log line holds the reset's ref")
	}
}

// Mistake: a reset with a bad ref. It is refused with a problem before
// anything is deleted, and tells no one.
func TestNotice_AResetWithABadRefChangesNothing(t *testing.T) {
	notes := &noticeRecorder{}
	h := newHarness(t, withNotifier(notes))
	h.check(t, map[string]any{"flow": "login", "account": "a", "ip": "192.0.2.1"})
	before := h.keys()
	res := h.post(t, "/v1/admin/reset", map[string]any{"flow": "login", "account": "a", "reason": "ticket 4711", "ref": "user\n1"})
	if res.status != http.StatusBadRequest || res.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d, content type %q; want a 400 problem", res.status, res.header.Get("Content-Type"))
	}
	if p := res.json(t); p["field"] != "ref" {
		t.Errorf("problem %v, want field ref", p)
	}
	if notes.len() != 0 || len(h.keys()) != len(before) {
		t.Errorf("a refused reset emitted %d notices and left %d keys of %d", notes.len(), len(h.keys()), len(before))
	}
}

// Attack: a ref holding a bidirectional override, sent so that the alert a
// notice becomes reads backwards ("user-‮42" is shown as "user-24", and
// the subject and event type after it are turned around too). Every route
// that takes a ref refuses each bidirectional formatting character, raw or
// as a JSON escape, with a 400 problem naming the field, before the store
// changes and without a notice.
func TestRef_ABidiOverrideCannotMakeAnAlertReadBackwards(t *testing.T) {
	notes := &noticeRecorder{}
	h := newHarness(t, withNotifier(notes))
	v := h.check(t, login("victim@example.com", "192.0.2.9"))
	h.report(t, map[string]any{"flow": "login", "account": "victim@example.com", "ip": "192.0.2.9", "outcome": "failure", "attempt": v.Attempt})
	told := notes.len()
	bodies := map[string]string{
		"/v1/check":       `{"flow":"login","account":"victim@example.com","ip":"192.0.2.1","ref":%s}`,
		"/v1/report":      `{"flow":"login","account":"victim@example.com","ip":"192.0.2.1","outcome":"success","ref":%s}`,
		"/v1/otp/send":    `{"destination":"+447400123456","channel":"sms","ip":"192.0.2.1","ref":%s}`,
		"/v1/admin/reset": `{"flow":"login","account":"victim@example.com","reason":"ticket 4711","ref":%s}`,
	}
	for _, r := range []rune{0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069} {
		for _, ref := range []string{`"user-` + string(r) + `24"`, fmt.Sprintf(`"user-\u%04x24"`, r)} {
			for path, body := range bodies {
				before := h.keys()
				res := h.do(t, http.MethodPost, path, "application/json", fmt.Sprintf(body, ref))
				if res.status != http.StatusBadRequest || res.header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("%s with ref %s: status %d, content type %q; want a 400 problem", path, ref, res.status, res.header.Get("Content-Type"))
				}
				if p := res.json(t); p["field"] != "ref" || p["type"] != "https://tollgate.dev/problems/invalid-field" {
					t.Errorf("%s with ref %s: problem %v, want invalid-field on ref", path, ref, p)
				}
				if after := h.keys(); !slices.Equal(before, after) {
					t.Errorf("%s with ref %s changed the store: %d keys before, %d after", path, ref, len(before), len(after))
				}
			}
		}
	}
	if got := notes.len() - told; got != 0 {
		t.Errorf("refused calls emitted %d notices", got)
	}
}
