package webhook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// received is one request a receiver answered with a 2xx.
type received struct {
	ID, Path string
	Body     payload
	Raw      string
}

// receiver is a real HTTP endpoint on loopback that verifies every request
// and records the ones it accepts. It answers 503 while down.
type receiver struct {
	t        *testing.T
	srv      *httptest.Server
	down     atomic.Bool
	hold     atomic.Bool   // requests wait for release (or their cancellation)
	held     chan struct{} // one value per request waiting in hold
	release  chan struct{}
	attempts atomic.Int64 // every request, accepted or not
	now      func() time.Time
	mu       sync.Mutex
	got      []received
	bad      []string // why a request failed verification
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	r := &receiver{t: t, held: make(chan struct{}, 100), release: make(chan struct{}), now: time.Now}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	t.Cleanup(r.unhold)
	return r
}

func (r *receiver) unhold() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	r.attempts.Add(1)
	body, _ := io.ReadAll(req.Body)
	if err := Verify(testSecret, req.Header, body, 5*time.Minute, r.now()); err != nil {
		r.mu.Lock()
		r.bad = append(r.bad, err.Error())
		r.mu.Unlock()
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	if r.hold.Load() {
		r.held <- struct{}{}
		select {
		case <-r.release:
		case <-req.Context().Done():
			return
		}
	}
	if r.down.Load() {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	var p payload
	if err := json.Unmarshal(body, &p); err != nil {
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, received{ID: req.Header.Get(HeaderID), Path: req.URL.Path, Body: p, Raw: string(body)})
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// deliveries returns what was accepted, on path ("" for all paths).
func (r *receiver) deliveries(path string) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, g := range r.got {
		if path == "" || g.Path == path {
			out = append(out, g)
		}
	}
	return out
}

// ids counts the accepted deliveries per webhook-id.
func (r *receiver) ids(path string) map[string]int {
	out := map[string]int{}
	for _, g := range r.deliveries(path) {
		out[g.ID]++
	}
	return out
}

func (r *receiver) checkSignatures() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bad) > 0 {
		r.t.Errorf("the receiver refused %d requests: %v", len(r.bad), r.bad[0])
	}
}

func (r *receiver) endpoint(name, tenant, path string) Endpoint {
	return Endpoint{Name: name, Tenant: tenant, URL: r.srv.URL + path, Secret: testSecret, RatePerSecond: 1000, Burst: 1000}
}

// eventually waits up to 10s (a loaded machine) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, what, cond)
}

// run starts d.Run and returns a stop that cancels it and waits for Run to return.
func run(t *testing.T, d *Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run = %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Errorf("Run did not return within 10s of its context's end")
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// newDispatcher is New with fast retries and a fresh registry, failing the test on error.
func newDispatcher(t *testing.T, cfg Config) (*Dispatcher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	if cfg.MinBackoff == 0 {
		cfg.MinBackoff = 5 * time.Millisecond
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 50 * time.Millisecond
	}
	if cfg.Poll == 0 {
		cfg.Poll = 20 * time.Millisecond
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d, reg
}

// metric sums the samples of a counter, gauge or histogram (its count)
// whose labels include the given name=value pairs.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}
