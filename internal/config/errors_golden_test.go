package config

import (
	"flag"
	"os"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/policy_errors.golden")

// policyMistakes are policy files with one mistake each, one for every
// message of the validation in authguard and here.
var policyMistakes = []string{
	// the file
	"flow:\n  login: {mode: shadow}\n",
	"- flows\n",
	"flows: [\n",
	// flows
	"flows: 5\n",
	"flows:\n  login: 5\n",
	"flows:\n  login:\n    acount_backoff: {}\n",
	"flows:\n  Log-In:\n    mode: enforce\n",
	"flows:\n  logn:\n    mode: shadow\n",
	"flows:\n  signup:\n    mode: shadow\n",
	"flows:\n  login:\n    mod: shadow\n",
	"flows:\n  login:\n    mode: loud\n",
	"flows:\n  login:\n    fail_mode: half\n",
	"flows:\n  login:\n    kind: both\n",
	"flows:\n  login:\n    device_trust: Other\n",
	"flows:\n  login:\n    ipv6_prefix: 8\n",
	"flows:\n  login:\n    ipv6_prefix: sixty\n",
	"flows:\n  login:\n    allow_list: [not-an-ip]\n",
	"flows:\n  login:\n    fail_closed_retry: 0s\n",
	"flows:\n  login:\n    same_password_window: 90d\n",
	"flows:\n  login:\n    attempt_ttl: 0s\n",
	"flows:\n  login:\n    attempt_ttl: 5x\n",
	"flows:\n  login:\n    device_token_ttl: 1m\n",
	"flows:\n  login:\n    owner_codes: 3\n",
	"flows:\n  login:\n    verifies: Otp\n",
	"flows:\n  step_up:\n    revoke_devices_on_password_change: true\n",
	"flows:\n  login:\n    revoke_devices_on_password_change: true\n  app_login:\n    template: login\n    device_trust: login\n",
	// events
	"flows:\n  login:\n    events:\n      emit: [login.new_devise]\n",
	"flows:\n  login:\n    events:\n      emits: [login.new_device]\n",
	"flows:\n  login:\n    events: {window: 10s}\n",
	"flows:\n  login:\n    events: {window: 0s}\n",
	"flows:\n  login:\n    events: {under_attack_failures: -1}\n",
	"flows:\n  login:\n    events: {emit: [otp.budget]}\n",
	"flows:\n  otp_send:\n    events: {emit: [account.under_attack]}\n",
	"flows:\n  login:\n    verifies: login\n",
	"flows:\n  api:\n    template: signup\n",
	"flows:\n  otp_send:\n    verifies: login\n",
	"flows:\n  otp_send:\n    prices: {fax: {default: 1}}\n",
	"flows:\n  otp_send:\n    prices: {sms: {default: -1}}\n",
	"flows:\n  otp_send:\n    prices: {sms: {GBR: 1}}\n",
	"flows:\n  otp_send:\n    prices: {sms: {GB: 2000000}}\n",
	"flows:\n  otp_send:\n    owner_codes: 101\n",
	"flows:\n  otp_send:\n    destination_prefix_digits: 7\n",
	"flows:\n  otp_send:\n    deny_number_types: [fax]\n",
	"flows:\n  otp_send:\n    allow_countries: [gb]\n",
	"flows:\n  otp_send:\n    deny_countries: [\"+0\"]\n",
	"flows:\n  otp_send:\n    prices: {sms: {default: 100}}\n",
	"flows:\n  api:\n    rules:\n" + manyRules(33),
	// rules
	"flows:\n  login:\n    rules:\n      - {subject: ip}\n",
	"flows:\n  login:\n    rules: [{name: ip_rate}, {name: ip_rate}]\n",
	"flows:\n  api:\n    rules:\n      - {name: ip_rate, off: true}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_sprya, off: true}\n",
	"flows:\n  login:\n    rules:\n      - {name: acount_backoff, max: 10m}\n",
	"flows:\n  login:\n    rules:\n      - {name: mystery, limit: 3}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_rate, burst: 5}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_spray, windows: [{window: 1h, max: 3}]}\n",
	"flows:\n  login:\n    rules:\n      - name: account_backoff\n        max: 30 minutes\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_rate, rate: 10/x}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_rate, rate: 3/s}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_rate, cost: lots}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_rate, limit: many}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_rate, limit: 0}\n",
	"flows:\n  login:\n    rules:\n      - {name: account_backoff, forget_after: 1m}\n",
	"flows:\n  login:\n    rules:\n      - {name: account_backoff, free: 0}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_spray, windows: [{window: 1h, limit: 0}]}\n",
	"flows:\n  login:\n    rules:\n      - {name: ip_spray, windows: []}\n",
	"flows:\n  api:\n    rules:\n      - {name: R, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, key: K, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, reason: unavailable, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: email, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip/8, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: device+ip, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    ipv6_prefix: 48\n    rules:\n      - {name: r, subject: ip/56, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: gcra, limit: 5, rate: 1/s}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, counts: always, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, past: never, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, clients: some, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: tenant, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, cost: price, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: device, clients: all, algorithm: backoff, device_free: 1, device_slots: 1, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, window: 1m, limit: 5, past: deny}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: destination, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: password_fingerprint, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: destination, algorithm: fixed_window, counts: failure, window: 1m, limit: 5}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: destination, algorithm: backoff, past: deny, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: destination, algorithm: backoff, counts: check, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: account, algorithm: backoff, counts: check, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: account, algorithm: backoff, past: captcha, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: account, algorithm: backoff, cost: 2, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: account, algorithm: backoff, device_free: 1, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: device, algorithm: backoff, device_slots: 1, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: device, algorithm: backoff, device_free: 1, device_slots: 21, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  login:\n    rules:\n      - {name: d2, subject: device, algorithm: backoff, device_free: 1, device_slots: 1, free: 1, base: 1s, factor: 2, max: 1m, forget_after: 1h}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: device, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: account, algorithm: distinct, of: account, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: account, past: delay, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: account, counts: check, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: account, cost: 2, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: account, limit: 5, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: account, free: 5, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: account}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: distinct, of: destination, counts: check, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: sliding_log, counts: failure, of: account, windows: [{window: 1h, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, counts: failure, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: token_bucket, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, windows: [{window: 1m, limit: 5}]}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, free: 1, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, window: 1m, limit: 5, cost: 6}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, window: 1m, rate: 1/s, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, window: 1m, limit: 5, min_volume: 3}\n",
	"flows:\n  api:\n    rules:\n      - {name: a, key: k, subject: ip, algorithm: fixed_window, window: 1m, limit: 5}\n      - {name: b, key: k, subject: account, algorithm: fixed_window, window: 1m, limit: 5}\n",
	"flows:\n  api:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, window: 1h, min_volume: 5, min_conversion: 50}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, counts: check, window: 1h, min_volume: 5, min_conversion: 50}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, past: delay, window: 1h, min_volume: 5, min_conversion: 50}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, cost: 2, window: 1h, min_volume: 5, min_conversion: 50}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, of: account, window: 1h, min_volume: 5, min_conversion: 50}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, free: 1, window: 1h, min_volume: 5, min_conversion: 50}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, limit: 3, window: 1h, min_volume: 5, min_conversion: 50}\n",
	"flows:\n  otp_send:\n    rules:\n      - {name: r, subject: ip, algorithm: conversion, window: 1h, min_volume: 5, min_conversion: 500}\n",
	"flows:\n  otp_send:\n    prices: {sms: {default: 10}}\n    rules:\n      - {name: r, subject: ip, algorithm: fixed_window, cost: price, window: 1h, limit: 5}\n",
}

// TestPolicyErrorsGolden holds the text of every policy mistake's error.
func TestPolicyErrorsGolden(t *testing.T) {
	var b strings.Builder
	for _, y := range policyMistakes {
		b.WriteString("=== " + strings.ReplaceAll(strings.TrimSuffix(y, "\n"), "\n", "\n... ") + "\n")
		_, err := LoadPolicy([]byte(y))
		if err == nil {
			b.WriteString("no error\n")
			continue
		}
		b.WriteString(err.Error() + "\n")
	}
	got := b.String()
	const path = "testdata/policy_errors.golden"
	if *updateGolden {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("policy errors differ from %s (go test -run TestPolicyErrorsGolden -update to rewrite it):\n%s", path, got)
	}
}
