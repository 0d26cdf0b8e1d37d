package e2e_test

import (
	"fmt"
	"strconv"
	"testing"
)

// sprayed are the fifty accounts of the sprays: user01..user50.
func sprayed() []string {
	users := make([]string, 50)
	for i := range users {
		users[i] = fmt.Sprintf("user%02d", i+1)
	}
	return users
}

// TestDjangoAdmin_OnePasswordSprayedOverFiftyAccountsGetsAtMostTenChecks
// sprays one common password over fifty real accounts of Django's admin,
// from one address and then (another password) from fifty: at most ten
// accounts get a password check at Django; every other attempt gets the
// challenge.
func TestDjangoAdmin_OnePasswordSprayedOverFiftyAccountsGetsAtMostTenChecks(t *testing.T) {
	w := need(t)
	tg, dj := w.djangoProxy, w.django
	users := sprayed()
	tests := []struct {
		name, password string
		bound          int // the policy's limit that stops it
		from           func(i int) string
	}{
		{"from one address", "Tg-e2e-Spring2026!", limitOf(t, tg, "ip_spray"), func(int) string { return "192.0.2.10" }},
		{"from fifty addresses", "Tg-e2e-Autumn2026!", limitOf(t, tg, "password_spray"), func(i int) string { return "198.18.0." + strconv.Itoa(i+1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := make([]int, len(users))
			for i, u := range users {
				before[i] = dj.failed(u)
			}
			challenged := 0
			for i, u := range users {
				if newClient(tt.from(i)).djangoLogin(t, tg.proxy, u, tt.password).challenged() {
					challenged++
				}
			}
			checked := 0
			for i, u := range users {
				checked += dj.failed(u) - before[i]
			}
			figure(t, "one password over %d accounts %s: %d accounts got a password check at Django, %d the challenge (bound %d)",
				len(users), tt.name, checked, challenged, tt.bound)
			if checked > tt.bound {
				t.Errorf("Django checked the sprayed password on %d accounts; want at most %d", checked, tt.bound)
			}
			if checked+challenged != len(users) {
				t.Errorf("%d checked + %d challenged of %d attempts: every attempt not checked should get the challenge", checked, challenged, len(users))
			}
		})
	}
}
