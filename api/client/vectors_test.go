package client_test

// The shared test vectors of clients/testdata: the Go, TypeScript and Python
// clients each run every one, so that a change of behaviour in one client
// fails until all three agree. They are plain JSON, read here as the other
// clients read them; account_fold.json alone is written by Go, from
// tollgate's own NormalizeAccount (vectors_fold_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// readVectors decodes clients/testdata/name into v, refusing unknown
// fields so that a misspelt vector fails rather than tests nothing.
func readVectors(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "clients", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

type proxiesVector struct {
	Name    string   `json:"name"`
	Trusted []string `json:"trusted"`
	Header  string   `json:"header"`
}

// newVectorProxies makes the Proxies a vector names, or the error NewProxies
// or parsing a prefix gave.
func newVectorProxies(v proxiesVector) (*client.Proxies, error) {
	cfg := client.ProxyConfig{}
	switch v.Header {
	case "none":
	case "Forwarded":
		cfg.Header = client.HeaderForwarded
	case "X-Forwarded-For":
		cfg.Header = client.HeaderXForwardedFor
	default:
		cfg.Header = 99
	}
	for _, s := range v.Trusted {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, err
		}
		cfg.Trusted = append(cfg.Trusted, p)
	}
	return client.NewProxies(cfg)
}

func TestVectors_ClientIP(t *testing.T) {
	var doc struct {
		About  string `json:"about"`
		Groups []struct {
			proxiesVector
			Cases []struct {
				Name  string      `json:"name"`
				Peer  string      `json:"peer"`
				Lines [][2]string `json:"lines"`
				Want  string      `json:"want"`
			} `json:"cases"`
		} `json:"groups"`
		ConfigErrors []proxiesVector `json:"config_errors"`
		ConfigOK     []proxiesVector `json:"config_ok"`
	}
	readVectors(t, "client_ip.json", &doc)
	n := 0
	for _, g := range doc.Groups {
		p, err := newVectorProxies(g.proxiesVector)
		if err != nil {
			t.Fatalf("%s: %v", g.Name, err)
		}
		for _, c := range g.Cases {
			n++
			t.Run(g.Name+"/"+c.Name, func(t *testing.T) {
				r := httptest.NewRequest(http.MethodPost, "/login", nil)
				r.RemoteAddr = c.Peer
				for _, l := range c.Lines {
					r.Header.Add(l[0], l[1])
				}
				got := ""
				if a := p.ClientIP(r); a.IsValid() {
					got = a.String()
				}
				if got != c.Want {
					t.Errorf("ClientIP(peer %q, %q) = %q, want %q", c.Peer, c.Lines, got, c.Want)
				}
			})
		}
	}
	for _, c := range doc.ConfigErrors {
		if _, err := newVectorProxies(c); err == nil {
			t.Errorf("config error %q: accepted", c.Name)
		}
	}
	for _, c := range doc.ConfigOK {
		if _, err := newVectorProxies(c); err != nil {
			t.Errorf("config %q: %v", c.Name, err)
		}
	}
	if n < 60 || len(doc.ConfigErrors) == 0 {
		t.Fatalf("only %d cases, %d config errors: the vectors did not load", n, len(doc.ConfigErrors))
	}
}

type responderVector struct {
	Policy      string      `json:"policy"`
	ProblemType string      `json:"problem_type"`
	Title       string      `json:"title"`
	StepUpPage  *pageVector `json:"step_up_page"`
}

// pageVector is an operator's page: a hook that writes exactly this status,
// these fields and this body.
type pageVector struct {
	Status  int               `json:"status"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func (p pageVector) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	for k, v := range p.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(p.Status)
	_, _ = io.WriteString(w, p.Body)
}

func (v responderVector) config() client.ResponderConfig {
	cfg := client.ResponderConfig{Policy: v.Policy, ProblemType: v.ProblemType, Title: v.Title}
	if v.StepUpPage != nil {
		cfg.StepUp = *v.StepUpPage
	}
	return cfg
}

func TestVectors_Respond(t *testing.T) {
	var doc struct {
		About string `json:"about"`
		Cases []struct {
			Name    string          `json:"name"`
			Config  responderVector `json:"config"`
			Verdict json.RawMessage `json:"verdict"`
			Want    struct {
				Status  int               `json:"status"`
				Headers map[string]string `json:"headers"`
				Body    string            `json:"body"`
				Proceed bool              `json:"proceed"`
				StepUp  bool              `json:"step_up"`
				HoldMS  int64             `json:"hold_ms"`
			} `json:"want"`
		} `json:"cases"`
		ConfigErrors []struct {
			Name   string          `json:"name"`
			Config responderVector `json:"config"`
		} `json:"config_errors"`
	}
	readVectors(t, "respond.json", &doc)
	stepUps := 0
	for _, c := range doc.Cases {
		if c.Want.StepUp {
			stepUps++
		}
		t.Run(c.Name, func(t *testing.T) {
			rs, err := client.NewResponder(c.Config.config())
			if err != nil {
				t.Fatal(err)
			}
			var v wire.Verdict
			if err := json.Unmarshal(c.Verdict, &v); err != nil {
				t.Fatal(err)
			}
			w := httptest.NewRecorder()
			res := rs.Respond(w, httptest.NewRequest(http.MethodPost, "/login", nil), v)
			if res.Proceed != c.Want.Proceed || res.StepUp != c.Want.StepUp || res.Hold != time.Duration(c.Want.HoldMS)*time.Millisecond {
				t.Errorf("Respond = %+v, want proceed %v step_up %v hold %d ms", res, c.Want.Proceed, c.Want.StepUp, c.Want.HoldMS)
			}
			status := 0
			if w.Code != http.StatusOK || w.Body.Len() > 0 || len(w.Header()) > 0 {
				status = w.Code
			}
			if status != c.Want.Status {
				t.Errorf("status %d, want %d", status, c.Want.Status)
			}
			got := map[string]string{}
			for k, vs := range w.Header() {
				got[strings.ToLower(k)] = strings.Join(vs, ", ")
			}
			if !reflect.DeepEqual(got, c.Want.Headers) {
				t.Errorf("headers %v, want %v", got, c.Want.Headers)
			}
			if w.Body.String() != c.Want.Body {
				t.Errorf("body %q, want %q", w.Body.String(), c.Want.Body)
			}
		})
	}
	for _, c := range doc.ConfigErrors {
		if _, err := client.NewResponder(c.Config.config()); err == nil {
			t.Errorf("config error %q: accepted", c.Name)
		}
	}
	if len(doc.Cases) < 10 || len(doc.ConfigErrors) == 0 || stepUps == 0 {
		t.Fatal("the vectors did not load")
	}
}

type cookieVector struct {
	Name    string  `json:"name"`
	MaxAgeS float64 `json:"max_age_s"`
}

func newVectorCookie(c cookieVector) (*client.DeviceCookie, error) {
	return client.NewDeviceCookie(client.DeviceCookieConfig{Name: c.Name, MaxAge: time.Duration(c.MaxAgeS * float64(time.Second))})
}

func TestVectors_DeviceCookie(t *testing.T) {
	var doc struct {
		About string `json:"about"`
		Set   []struct {
			Name   string       `json:"name"`
			Config cookieVector `json:"config"`
			Token  string       `json:"token"`
			Want   *string      `json:"want"`
			Error  bool         `json:"error"`
		} `json:"set"`
		Clear []struct {
			Name   string       `json:"name"`
			Config cookieVector `json:"config"`
			Want   string       `json:"want"`
		} `json:"clear"`
		Token []struct {
			Name   string       `json:"name"`
			Config cookieVector `json:"config"`
			Cookie *string      `json:"cookie"`
			Want   string       `json:"want"`
		} `json:"token"`
		ConfigErrors []struct {
			Name   string       `json:"name"`
			Config cookieVector `json:"config"`
		} `json:"config_errors"`
	}
	readVectors(t, "device_cookie.json", &doc)
	must := func(t *testing.T, c cookieVector) *client.DeviceCookie {
		t.Helper()
		dc, err := newVectorCookie(c)
		if err != nil {
			t.Fatal(err)
		}
		return dc
	}
	for _, c := range doc.Set {
		t.Run("set/"+c.Name, func(t *testing.T) {
			w := httptest.NewRecorder()
			err := must(t, c.Config).Set(w, c.Token)
			if (err != nil) != c.Error {
				t.Fatalf("Set error = %v, want error %v", err, c.Error)
			}
			got := w.Header().Values("Set-Cookie")
			switch {
			case c.Want == nil && len(got) != 0:
				t.Errorf("Set-Cookie %q, want none", got)
			case c.Want != nil && (len(got) != 1 || got[0] != *c.Want):
				t.Errorf("Set-Cookie %q, want %q", got, *c.Want)
			}
		})
	}
	for _, c := range doc.Clear {
		t.Run("clear/"+c.Name, func(t *testing.T) {
			w := httptest.NewRecorder()
			must(t, c.Config).Clear(w)
			if got := w.Header().Values("Set-Cookie"); len(got) != 1 || got[0] != c.Want {
				t.Errorf("Set-Cookie %q, want %q", got, c.Want)
			}
		})
	}
	for _, c := range doc.Token {
		t.Run("token/"+c.Name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/login", nil)
			if c.Cookie != nil {
				r.Header.Set("Cookie", *c.Cookie)
			}
			if got := must(t, c.Config).Token(r); got != c.Want {
				t.Errorf("Token = %q, want %q", got, c.Want)
			}
		})
	}
	for _, c := range doc.ConfigErrors {
		if _, err := newVectorCookie(c.Config); err == nil {
			t.Errorf("config error %q: accepted", c.Name)
		}
	}
	if len(doc.Set) == 0 || len(doc.Token) == 0 || len(doc.ConfigErrors) == 0 {
		t.Fatal("the vectors did not load")
	}
}

// failModeVector is one case of fail_modes.json.
type failModeVector struct {
	Name   string `json:"name"`
	Client struct {
		TimeoutMS          int `json:"timeout_ms"`
		FailOpenPerAccount int `json:"fail_open_per_account"`
		FailOpenPerAddress int `json:"fail_open_per_address"`
	} `json:"client"`
	Server struct {
		Down    bool              `json:"down"`
		DelayMS int               `json:"delay_ms"`
		Status  int               `json:"status"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	} `json:"server"`
	Steps []struct {
		Call    string          `json:"call"`
		Mode    string          `json:"mode"`
		Request json.RawMessage `json:"request"`
		Want    struct {
			Action     string   `json:"action"`
			DelayMS    int64    `json:"delay_ms"`
			RetryAfter int64    `json:"retry_after"`
			Reasons    []string `json:"reasons"`
			Fallback   bool     `json:"fallback"`
			Error      *struct {
				Kind   string `json:"kind"`
				Status int    `json:"status"`
				Type   string `json:"type"`
				Field  string `json:"field"`
			} `json:"error"`
		} `json:"want"`
	} `json:"steps"`
	WantRequest *struct {
		Method      string `json:"method"`
		Path        string `json:"path"`
		ContentType string `json:"content_type"`
	} `json:"want_request"`
}

// vectorServer is the stand-in a fail-mode vector describes: its base URL
// and the last request it got.
func vectorServer(t *testing.T, c failModeVector) (base string, last func() *http.Request) {
	t.Helper()
	if c.Server.Down {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base = "http://" + ln.Addr().String()
		ln.Close()
		return base, func() *http.Request { return nil }
	}
	var (
		mu  sync.Mutex
		got *http.Request
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Clone(context.Background()) // the handler's r is not the test's to read
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body) // so that a client hanging up ends the delay, and srv.Close waits for none
		if c.Server.DelayMS > 0 {
			select {
			case <-time.After(time.Duration(c.Server.DelayMS) * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
		for k, v := range c.Server.Headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(c.Server.Status)
		_, _ = w.Write([]byte(c.Server.Body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, func() *http.Request {
		mu.Lock()
		defer mu.Unlock()
		return got
	}
}

func TestVectors_FailModes(t *testing.T) {
	t.Parallel() // its timeouts wait; the package's other waits overlap them
	var doc struct {
		About string           `json:"about"`
		Cases []failModeVector `json:"cases"`
	}
	readVectors(t, "fail_modes.json", &doc)
	const vectorTimeout = 5 * time.Second
	modes := map[string]client.FailMode{"open": client.FailOpen, "delay": client.FailDelay, "captcha": client.FailCaptcha}
	steps := 0
	for _, c := range doc.Cases {
		t.Run(c.Name, func(t *testing.T) {
			base, last := vectorServer(t, c)
			// A case without timeout_ms runs with vectorTimeout, not the
			// client's 250 ms default: a stand-in's answer on a loaded
			// machine must not turn into a timeout (CI saw 358 ms once).
			cfg := client.Config{BaseURL: base, FailOpenPerAccount: c.Client.FailOpenPerAccount, FailOpenPerAddress: c.Client.FailOpenPerAddress, Timeout: vectorTimeout}
			if c.Client.TimeoutMS > 0 {
				cfg.Timeout = time.Duration(c.Client.TimeoutMS) * time.Millisecond
			}
			// A stand-in that holds its answer past the case's timeout
			// times out at any shorter one too, by the same path: the
			// runner's is short so that each step does not wait out 100 ms.
			if c.Client.TimeoutMS > 0 && c.Server.DelayMS > c.Client.TimeoutMS {
				cfg.Timeout = 10 * time.Millisecond
			}
			cl, err := client.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range c.Steps {
				steps++
				mode, ok := modes[s.Mode]
				if !ok {
					t.Fatalf("step %d: mode %q", i, s.Mode)
				}
				v, err := vectorCall(t, cl, s.Call, mode, s.Request)
				w := s.Want
				reasons := v.Reasons
				if reasons == nil {
					reasons = []string{}
				}
				if w.Reasons == nil {
					w.Reasons = []string{}
				}
				if v.Action != w.Action || v.DelayMS != w.DelayMS || v.RetryAfter != w.RetryAfter ||
					!reflect.DeepEqual(reasons, w.Reasons) || v.Fallback != w.Fallback {
					t.Errorf("step %d (%s %s): verdict %+v fallback %v, want %+v", i, s.Call, s.Mode, v.Verdict, v.Fallback, w)
				}
				if kind := errorKind(err); w.Error == nil && err != nil || w.Error != nil && kind != w.Error.Kind {
					t.Errorf("step %d: error %v (%s), want %+v", i, err, kind, w.Error)
				} else if w.Error != nil && (w.Error.Status != 0 || w.Error.Type != "" || w.Error.Field != "") {
					var e *client.Error
					if !errors.As(err, &e) || e.Status != w.Error.Status && w.Error.Status != 0 ||
						e.Type != w.Error.Type && w.Error.Type != "" || e.Field != w.Error.Field && w.Error.Field != "" {
						t.Errorf("step %d: error %#v, want %+v", i, e, w.Error)
					}
				}
				if wr := c.WantRequest; wr != nil {
					r := last()
					if r == nil || r.Method != wr.Method || r.URL.Path != wr.Path || r.Header.Get("Content-Type") != wr.ContentType {
						t.Errorf("step %d: the server got %v, want %+v", i, r, wr)
					}
				}
			}
		})
	}
	if steps < 50 {
		t.Fatalf("only %d steps: the vectors did not load", steps)
	}
}

// vectorCall makes call with the vector's request body, decoded strictly.
func vectorCall(t *testing.T, cl *client.Client, call string, mode client.FailMode, body json.RawMessage) (client.Verdict, error) {
	t.Helper()
	strict := func(v any) {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%s request: %v", call, err)
		}
	}
	ctx := context.Background()
	switch call {
	case "check":
		var req wire.CheckRequest
		strict(&req)
		return cl.Check(ctx, req, mode)
	case "report":
		var req wire.ReportRequest
		strict(&req)
		return cl.Report(ctx, req, mode)
	case "send":
		var req wire.SendRequest
		strict(&req)
		return cl.SendOTP(ctx, req, mode)
	}
	t.Fatalf("call %q", call)
	return client.Verdict{}, nil
}

// errorKind names err as the vectors do: none, timeout, unavailable or
// refused (an *Error that is not an unavailability).
func errorKind(err error) string {
	var e *client.Error
	switch {
	case err == nil:
		return "none"
	case errors.Is(err, client.ErrTimeout):
		return "timeout"
	case errors.Is(err, client.ErrUnavailable):
		return "unavailable"
	case errors.As(err, &e):
		return "refused"
	}
	return "other: " + err.Error()
}

// TestVectors_CoverEveryFile fails when a vector file is added that no test
// here reads, so that the three clients cannot drift through a file only
// some of them run.
func TestVectors_CoverEveryFile(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "clients", "testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	sort.Strings(names)
	want := []string{"account_fold.json", "breached.json", "client_ip.json", "device_cookie.json", "fail_modes.json", "respond.json", "webhooks.json"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("vector files %v, want %v: give a new file a test in every client", names, want)
	}
}
