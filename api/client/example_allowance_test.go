package client_test

import (
	"context"
	"fmt"
	"net"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// While tollgate is down, FailOpen lets each account through a few times
// (5 by default, coming back over 30 minutes) and then answers as
// FailDelay does, so a guesser who takes tollgate down gets a handful of
// guesses, not a bypass. Stats counts both answers, for the operator.
func ExampleClient_Stats() {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more

	tg, _ := client.New(client.Config{
		BaseURL: down,
		// The defaults, spelt out; a negative value turns a limit off.
		FailOpenPerAccount: client.DefaultFailOpenPerAccount, // 5
		FailOpenPerAddress: client.DefaultFailOpenPerAddress, // 50
		FailOpenWindow:     client.DefaultFailOpenWindow,     // 30 minutes
	})
	for i := range 7 { // one account, from a new address each time
		v, _ := tg.Check(context.Background(), wire.CheckRequest{Flow: "login",
			Account: "alice@example.com", IP: fmt.Sprintf("198.51.100.%d", i+1)}, client.FailOpen)
		fmt.Println(v.Action, v.RetryAfter, v.Reasons)
	}
	v, _ := tg.Check(context.Background(), wire.CheckRequest{Flow: "login",
		Account: "bob@example.com", IP: "203.0.113.9"}, client.FailOpen)
	fmt.Println("bob:", v.Action, v.Fallback)

	s := tg.Stats()
	fmt.Println("proceeds:", s.FailOpenProceeds, "refused:", s.FailOpenRefusedAccount+s.FailOpenRefusedAddress)
	// Output:
	// proceed 0 [client_fallback]
	// proceed 0 [client_fallback]
	// proceed 0 [client_fallback]
	// proceed 0 [client_fallback]
	// proceed 0 [client_fallback]
	// delay 1 [client_fallback client_fallback_allowance]
	// delay 1 [client_fallback client_fallback_allowance]
	// bob: proceed true
	// proceeds: 6 refused: 2
}
