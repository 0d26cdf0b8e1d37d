package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
)

// breachedVectors is clients/testdata/breached.json.
type breachedVectors struct {
	About string `json:"about"`
	Cases []struct {
		Password string `json:"password"`
		SHA1     string `json:"sha1"`
		Prefix   string `json:"prefix"`
		Suffix   string `json:"suffix"`
		Range    string `json:"range"`
		Count    int64  `json:"count"`
		Breached bool   `json:"breached"`
	} `json:"cases"`
}

// rangeServer serves the vectors' ranges at GET /v1/breached/{prefix} and
// records the paths asked for and everything else the requests carried.
type rangeServer struct {
	mu       sync.Mutex
	paths    []string
	requests []string // method, URL, header fields and body of each request
}

func newRangeServer(t *testing.T, ranges map[string]string) (*rangeServer, *client.Client) {
	t.Helper()
	rs := &rangeServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var dump strings.Builder
		dump.WriteString(r.Method + " " + r.URL.String() + "\n")
		r.Header.Write(&dump)
		dump.Write(body)
		rs.mu.Lock()
		rs.paths = append(rs.paths, r.URL.Path)
		rs.requests = append(rs.requests, dump.String())
		rs.mu.Unlock()
		prefix, ok := strings.CutPrefix(r.URL.Path, "/v1/breached/")
		body2, found := ranges[strings.ToUpper(prefix)]
		if !ok || r.Method != http.MethodGet || !found {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, body2)
	}))
	t.Cleanup(srv.Close)
	c, err := client.New(client.Config{BaseURL: srv.URL, Timeout: 5 * time.Second, BreachedTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return rs, c
}

// Every client answers the shared vectors alike: only the prefix is sent,
// and the suffix is matched in the range (a padding line of count 0 never
// matches: "Passwört-ñ-ünïcode" sits in its range with count 0).
func TestBreached_SharedVectors(t *testing.T) {
	var doc breachedVectors
	readVectors(t, "breached.json", &doc)
	if len(doc.Cases) == 0 {
		t.Fatal("breached.json has no cases")
	}
	ranges := map[string]string{}
	for _, c := range doc.Cases {
		ranges[c.Prefix] = c.Range
	}
	rs, tc := newRangeServer(t, ranges)
	for _, c := range doc.Cases {
		t.Run(c.Password, func(t *testing.T) {
			got, err := tc.Breached(context.Background(), c.Password)
			if err != nil {
				t.Fatalf("Breached: %v", err)
			}
			if got != c.Breached {
				t.Errorf("Breached(%q) = %v, want %v", c.Password, got, c.Breached)
			}
			rs.mu.Lock()
			last := rs.paths[len(rs.paths)-1]
			rs.mu.Unlock()
			if want := "/v1/breached/" + c.Prefix; last != want {
				t.Errorf("asked for %s, want %s", last, want)
			}
		})
	}
}

// An eavesdropper on the calls to tollgate (or tollgate's log) learns five
// hex digits of the hash: never the password, its full hash or the suffix.
func TestBreached_TheCallCarriesOnlyTheFiveDigitPrefix(t *testing.T) {
	var doc breachedVectors
	readVectors(t, "breached.json", &doc)
	c := doc.Cases[0]
	rs, tc := newRangeServer(t, map[string]string{c.Prefix: c.Range})
	if _, err := tc.Breached(context.Background(), c.Password); err != nil {
		t.Fatal(err)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.requests) != 1 {
		t.Fatalf("%d requests, want 1", len(rs.requests))
	}
	req := strings.ToUpper(rs.requests[0])
	for _, secret := range []string{c.Password, c.Suffix, c.SHA1, c.Suffix[:8]} {
		if strings.Contains(req, strings.ToUpper(secret)) {
			t.Errorf("the request holds %q:\n%s", secret, rs.requests[0])
		}
	}
}

// A breached lookup that fails in any way answers false with an error, for
// the log: tollgate without a corpus (404 breached-off), an unreachable
// upstream (503), a broken answer, a tollgate that does not answer in time.
// The caller reports breached false and the login goes on.
func TestBreached_ABreachedCheckErrorNeverFailsTheLogin(t *testing.T) {
	var doc breachedVectors
	readVectors(t, "breached.json", &doc)
	c := doc.Cases[0] // "password": breached, were the answer read
	tests := []struct {
		name    string
		handler http.HandlerFunc
	}{
		{"404 breached-off", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"type":"https://tollgate.dev/problems/breached-off","title":"Not Found","status":404}`)
		}},
		{"503 upstream unreachable", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
		}},
		{"500 with the range as body", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, c.Range)
		}},
		{"a body too large", func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, strings.Repeat(c.Range, 300_000/len(c.Range)+1))
		}},
		{"no answer before the timeout", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}},
		{"the connection cut", func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(tt.handler)
			defer srv.Close()
			tc, err := client.New(client.Config{BaseURL: srv.URL, BreachedTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			defer tc.CloseIdleConnections()
			got, err := tc.Breached(context.Background(), c.Password)
			if got || err == nil {
				t.Fatalf("Breached = %v, %v; want false and an error", got, err)
			}
			if !errors.Is(err, client.ErrUnavailable) {
				var e *client.Error
				if !errors.As(err, &e) {
					t.Errorf("error %v is neither ErrUnavailable nor an *Error", err)
				}
			}
			for _, secret := range []string{c.Password, c.Prefix, c.Suffix} {
				if strings.Contains(strings.ToUpper(err.Error()), strings.ToUpper(secret)) {
					t.Errorf("the error %q holds %q", err, secret)
				}
			}
		})
	}
}
