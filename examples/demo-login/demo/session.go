package demo

import (
	"crypto/rand"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"
)

// sessionCookie names the demo's own session cookie. Like the device
// cookie, it is "__Host-" prefixed, Secure and HttpOnly; browsers accept
// Secure cookies from http://127.0.0.1 and http://localhost.
const sessionCookie = "__Host-demo-session"

const (
	// pendingTTL is how long a session that passed the password step has
	// to pass the code step.
	pendingTTL = 10 * time.Minute
	// signedInTTL is how long a signed-in session lasts.
	signedInTTL = time.Hour
	// codeTTL is how long a sent code can be used.
	codeTTL = 5 * time.Minute
	// maxSessions bounds the sessions kept in memory.
	maxSessions = 10_000
	// maxSMS bounds the messages a session's phone panel shows.
	maxSMS = 10
)

// session is one browser's state after the password step.
type session struct {
	id       string
	user     string // the account's name
	phone    string
	signedIn bool
	expires  time.Time
	// loginToken is the device token the login success returned: it goes
	// into the device cookie once the code step has passed too.
	loginToken  string
	code        string
	codeExpires time.Time
	sms         []SMS
}

// SMS is a message the demo would have sent by SMS; the page shows it in
// its phone panel instead.
type SMS struct {
	At   time.Time
	To   string
	Code string
}

// sessions keeps sessions in memory, bounded and expiring.
type sessions struct {
	now func() time.Time
	mu  sync.Mutex
	m   map[string]*session
}

func newSessions(now func() time.Time) *sessions {
	return &sessions{now: now, m: make(map[string]*session)}
}

// create starts a session for the account that just passed the password
// step; it returns false when the store is full.
func (s *sessions) create(user, phone, loginToken string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.m) >= maxSessions {
		maps.DeleteFunc(s.m, func(_ string, v *session) bool { return !now.Before(v.expires) })
		if len(s.m) >= maxSessions {
			return session{}, false
		}
	}
	v := &session{id: rand.Text(), user: user, phone: phone, loginToken: loginToken, expires: now.Add(pendingTTL)}
	s.m[v.id] = v
	return v.snapshot(), true
}

// get returns a copy of the request's session, if it has a live one.
func (s *sessions) get(r *http.Request) (session, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return session{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[c.Value]
	if !ok {
		return session{}, false
	}
	if !s.now().Before(v.expires) {
		delete(s.m, v.id)
		return session{}, false
	}
	return v.snapshot(), true
}

// update changes the session id with f, under the store's lock; it returns
// false when the session is gone.
func (s *sessions) update(id string, f func(v *session)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id]
	if !ok || !s.now().Before(v.expires) {
		return false
	}
	f(v)
	return true
}

// signIn marks the session signed in under a fresh id, so that an id seen
// before the code step is worth nothing after it, and returns it.
func (s *sessions) signIn(id string) (session, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[id]
	if !ok || !s.now().Before(v.expires) {
		return session{}, false
	}
	delete(s.m, id)
	v.id, v.signedIn, v.expires = rand.Text(), true, s.now().Add(signedInTTL)
	v.loginToken, v.code = "", ""
	s.m[v.id] = v
	return v.snapshot(), true
}

// end deletes the session id.
func (s *sessions) end(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, id)
}

func (v *session) snapshot() session {
	c := *v
	c.sms = slices.Clone(v.sms)
	return c
}

// setSessionCookie sends the session id to the browser.
func setSessionCookie(w http.ResponseWriter, id string) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: id, Path: "/",
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
}

// clearSessionCookie tells the browser to drop the session cookie.
func clearSessionCookie(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	})
}
