package e2e_test

import (
	"bufio"
	"os"
	"sync"
	"testing"
)

// TestTwoProxiesOnOneRedis_AnAttackerAlternatingBetweenThemGetsAtMostFreePlusTwoChecks
// runs two tollgate serve processes in front of one Django, with their
// state on one real redis-server, and an attacker who sends every other
// guess of the top-100 list (16 at a time) to the other proxy: bob's
// account is counted once, so Django checks at most free+2 of them.
func TestTwoProxiesOnOneRedis_AnAttackerAlternatingBetweenThemGetsAtMostFreePlusTwoChecks(t *testing.T) {
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
	for i := range passwords {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	got := dj.failed("bob") - before
	figure(t, "%d guesses at bob alternating between two proxies on one Redis: %d failed password checks at Django (free %d, bound %d)",
		len(passwords), got, free, free+2)
	if got > free+2 {
		t.Errorf("Django checked %d wrong passwords for bob through two proxies; want at most free+2 = %d", got, free+2)
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
