package client_test

import (
	"context"
	"slices"
	"testing"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
	"github.com/tollgate-auth/tollgate/authguard"
)

func TestClient_HeldListsThenResetHeldUnlocks(t *testing.T) {
	ts := startTollgate(t, func(c *authguard.Config) { c.HeldBytes = authguard.DefaultHeldBytes })
	c, err := client.New(client.Config{BaseURL: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 6 {
		if _, err := c.Report(ctx, wire.ReportRequest{Flow: "login", Account: alice, IP: aliceIP, Outcome: wire.OutcomeFailure}, client.FailDelay); err != nil {
			t.Fatal(err)
		}
	}
	l, err := c.Held(ctx, client.HeldQuery{Flow: "login", Kind: "account", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, x := range l.Subjects {
		got = append(got, x.Subject)
	}
	if !slices.Equal(got, []string{alice}) || l.Counts["login:account"] != 1 {
		t.Fatalf("Held = %+v, want alice alone", l)
	}
	dry, err := c.ResetHeld(ctx, wire.HeldResetRequest{Flow: "login", Kind: "account", Reason: "ticket 1", DryRun: true})
	if err != nil || dry.Matched != 1 || dry.Reset != 0 || !dry.DryRun {
		t.Fatalf("dry run = %+v, %v", dry, err)
	}
	r, err := c.ResetHeld(ctx, wire.HeldResetRequest{Flow: "login", Subjects: []string{alice}, Reason: "ticket 1"})
	if err != nil || r.Reset != 1 {
		t.Fatalf("ResetHeld = %+v, %v", r, err)
	}
	if v, err := c.Check(ctx, login(), client.FailDelay); err != nil || v.Action != wire.ActionProceed {
		t.Errorf("after ResetHeld alice's check = %+v, %v; want proceed", v, err)
	}
}
