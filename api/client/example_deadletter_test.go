package client_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// An on-call script replays the deliveries tollgate gave up on while a
// receiver was down. A tollgate whose configuration has no webhooks
// section answers 404 not-found, which is not "no dead letters".
func ExampleClient_DeadLetters() {
	srv := exampleTollgate() // no webhooks section
	defer srv.Close()
	tg, _ := client.New(client.Config{BaseURL: srv.URL})
	ctx := context.Background()

	l, err := tg.DeadLetters(ctx, 0) // 0: the server's default, 100
	var ce *client.Error
	if errors.As(err, &ce) && ce.Type == wire.ProblemNotFound {
		fmt.Println("this tollgate sends no webhooks")
		return
	} else if err != nil {
		fmt.Println(err)
		return
	}
	for _, x := range l {
		r, err := tg.ReplayWebhook(ctx, wire.ReplayRequest{ID: x.ID, Reason: "receiver fixed, incident 93"})
		fmt.Println(x.ID, x.Type, x.Endpoint, x.LastError, r.Replayed, err)
	}
	// Output: this tollgate sends no webhooks
}
