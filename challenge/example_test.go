package challenge_test

import (
	"context"
	"fmt"
	"strconv"

	"github.com/tollgate-auth/tollgate/challenge"
)

// A plug-in's round trip: issue a proof-of-work challenge, let the browser
// find the nonce (here, a loop), verify it: solved once, replayed after.
func ExampleChallenger_Verify() {
	c, err := challenge.New(challenge.Config{Secret: []byte("0123456789abcdef0123456789abcdef"), Difficulty: 8})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	ch, _ := c.Issue(ctx, challenge.IssueOptions{Tenant: "shop"})
	var nonce uint64
	for challenge.LeadingZeroBits(challenge.WorkHash(ch.Token, nonce)) < ch.Difficulty {
		nonce++
	}
	s := challenge.Solution{Token: ch.Token, Nonce: strconv.FormatUint(nonce, 10)}
	for range 2 {
		r, _ := c.Verify(ctx, "shop", "", s)
		fmt.Println(r.Solved, r.Reason)
	}
	// Output:
	// true solved
	// false replayed
}
