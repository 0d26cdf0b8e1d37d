package e2e_test

import (
	"bufio"
	"os"
	"sync"
	"testing"
	"time"
)

// TestTwoProxiesOnOneRedis_AnAttackerAlternatingBetweenThemGetsNoMoreThanFromOne
// runs two tollgate serve processes in front of one Django, with their
// state on one real redis-server, and an attacker who sends every other
// guess of the top-100 list (16 at a time) to the other proxy: bob's
// account is counted once, so Django checks no more of them than one
// proxy lets through in the attack's time (free+2 within 3 s).
func TestTwoProxiesOnOneRedis_AnAttackerAlternatingBetweenThemGetsNoMoreThanFromOne(t *testing.T) {
	w := need(t)
	dj := w.django
	free := free(t, w.pair[0])
	passwords := top100(t)
	before := dj.failed("bob")
	c := newClient("203.0.113.201")
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		signIns int
		next    = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				tg := w.pair[i%2]
				a, err := c.tryPost(tg.proxy+djangoLoginPath, djangoLoginBody("bob", passwords[i]), "csrftoken="+csrfPair)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else if a.status == 302 {
					signIns++
				}
				mu.Unlock()
			}
		})
	}
	start := time.Now()
	for i := range passwords {
		next <- i
	}
	close(next)
	wg.Wait()
	span := time.Since(start)
	for _, err := range errs {
		t.Error(err)
	}
	got := dj.failed("bob") - before
	bound := attackBound(t, w.pair[0], span)
	figure(t, "%d guesses at bob alternating between two proxies on one Redis: %d failed password checks at Django (free %d; bound %d for an attack of %v, free+2 = %d within 3 s)",
		len(passwords), got, free, bound, span.Round(time.Millisecond), free+2)
	if got > bound {
		t.Errorf("Django checked %d wrong passwords for bob through two proxies; want at most %d in %v, as one proxy would allow", got, bound, span.Round(time.Millisecond))
	}
	if got < free {
		t.Errorf("Django checked %d passwords for bob, fewer than free (%d): the guesses did not get through", got, free)
	}
	if signIns != 0 {
		t.Errorf("%d guesses signed in; bob's password is not in the list", signIns)
	}
}

// top100 is testdata/top100.txt's passwords.
func top100(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("testdata/top100.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		out = append(out, s.Text())
	}
	return out
}
