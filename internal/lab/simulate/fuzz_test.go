package simulate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tollgate-auth/tollgate/authguard"
)

// FuzzParseScenario checks that no input makes the parser panic, and that
// what it accepts is consistent.
func FuzzParseScenario(f *testing.F) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "..", "scenarios", "*.yaml"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{goodScenario, base, small, pair, abilities, withFlows, sends, "", "a: [", "name: x\nduration: 1h\nactors: [{}]\n",
		"name: x\nduration: 1h\nactors:\n  - &a {name: a}\n  - *a\n", "expect: {a.b: c}\n",
		"name: x\nduration: 1h\nstore: {max_entries: 1}\nactors:\n  - {name: a, accounts: {fresh: true}, ips: {fresh_ipv6_in: \"::/0\"}, rate: 1/s, device_token_from: a}\n",
		"name: x\nduration: 1h\nactors:\n  - {name: a, accounts: [a@b], ips: [\"2002:c000:204::1\"], every: 1h, mints_device_token_in: login, device_token: false}\n",
		"name: x\nduration: 1h\ninstances: 2\nactors:\n  - {name: a, instance: 2, accounts: [a@b], ips: [192.0.2.1], rate: 1/m, report_token: foreign, report_replays: 2, " +
			"solves_captcha: 0.25, own_success: {account: me@b, every: 3, device_token: true}, second_phase: {at: 10m, logins: 20}}\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario("fuzz.yaml", data)
		if err != nil {
			return
		}
		if sc.Name == "" || sc.Duration <= 0 || sc.Duration > MaxDuration || len(sc.Actors) == 0 {
			t.Fatalf("accepted an invalid scenario: %+v", sc)
		}
		if sc.Store.MaxEntries < 0 || sc.Store.MaxEntries > MaxStoreEntries {
			t.Fatalf("accepted an invalid store: %+v", sc.Store)
		}
		if sc.Instances < 1 || sc.Instances > MaxInstances {
			t.Fatalf("accepted %d instances", sc.Instances)
		}
		for _, a := range sc.Actors {
			// A send actor may have no accounts.
			if (a.Accounts.Len() == 0 && !a.Sends()) != a.Accounts.Fresh || (a.IPs.Len() == 0) != a.IPs.FreshIPv6In.IsValid() ||
				a.Burst < 1 || a.Start < 0 || a.Stop <= a.Start || a.Stop > sc.Duration ||
				(a.Every > 0) == (a.Rate.Per > 0) {
				t.Fatalf("accepted an invalid actor: %+v", a)
			}
			if a.Accounts.Fresh && (a.Every > 0 || a.DeviceToken || a.DeviceTokenFrom != "") {
				t.Fatalf("accepted fresh accounts with every, device_token or device_token_from: %+v", a)
			}
			if p := a.IPs.FreshIPv6In; p.IsValid() && (!p.Addr().Is6() || p.Bits() == 128 || p != p.Masked()) {
				t.Fatalf("accepted an invalid fresh_ipv6_in: %+v", a)
			}
			sources := 0
			for _, set := range []bool{a.DeviceToken, a.DeviceTokenFrom != "", a.MintsDeviceTokenIn != ""} {
				if set {
					sources++
				}
			}
			if a.OwnSuccess.DeviceToken {
				sources++
			}
			if a.ReportToken > ReportSkip || a.ReportReplays < 0 || a.ReportReplays > MaxReplays || !(a.SolvesCaptcha >= 0 && a.SolvesCaptcha <= 1) ||
				a.Instance < 1 || a.Instance > sc.Instances || a.OwnSuccess.Every < 0 || (a.OwnSuccess.Every == 0) != (a.OwnSuccess.Account == "") {
				t.Fatalf("accepted an invalid behaviour: %+v", a)
			}
			if ph := a.SecondPhase; ph.Logins != 0 && (a.Every > 0 || ph.Logins > MaxPhaseLogins || ph.At < a.Start || ph.At >= a.Stop) {
				t.Fatalf("accepted an invalid second_phase: %+v", a)
			}
			if a.Tenant != "" && !tenantRE.MatchString(a.Tenant) {
				t.Fatalf("accepted tenant %q", a.Tenant)
			}
			if a.Sends() && (a.ReportToken != ReportOwn || a.ReportReplays != 0 || a.OwnSuccess.Every != 0) {
				t.Fatalf("accepted report behaviour on a send actor: %+v", a)
			}
			if sources > 1 {
				t.Fatalf("accepted more than one device token source: %+v", a)
			}
			if a.Sends() {
				if a.Channel < authguard.ChannelSMS || a.Channel > authguard.ChannelEmail || a.Outcome != 0 || a.Typos != 0 || a.TypoRate != 0 ||
					a.Password != "" || a.DeviceToken || a.MintsDeviceTokenIn != "" || (a.DeviceTokenFrom != "" && a.Accounts.Len() == 0 && !a.Accounts.Fresh) ||
					(a.Destinations.Count > 0) == (len(a.Destinations.List) > 0) {
					t.Fatalf("accepted an invalid send actor: %+v", a)
				}
				for _, d := range a.Destinations.List {
					if _, err := authguard.ParseDestination(a.Channel, d, 3); err != nil {
						t.Fatalf("accepted destination %q for %v: %v", d, a.Channel, err)
					}
				}
			} else if a.Channel != 0 || a.Destinations.Len() != 0 {
				t.Fatalf("accepted a channel or destinations without a send actor: %+v", a)
			}
			if a.DeviceTokenFrom != "" {
				if from := sc.actor(a.DeviceTokenFrom); from == nil || from == a || !from.DeviceToken {
					t.Fatalf("accepted device_token_from %q naming no actor that keeps tokens: %+v", a.DeviceTokenFrom, a)
				}
			}
		}
	})
}
