package redistest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/tollgate-auth/tollgate/internal/testkit"
)

// TestSleeping_TellsADebugSleepFromAnIdleServer: an idle server is not
// sleeping, one in DEBUG SLEEP is, and once the command has answered it no
// longer is.
func TestSleeping_TellsADebugSleepFromAnIdleServer(t *testing.T) {
	in := Server(t)
	c := redis.NewClient(&redis.Options{Addr: in.Addr, ReadTimeout: 10 * time.Second})
	defer c.Close()
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if in.Sleeping() {
		t.Fatal("an idle server is sleeping")
	}
	done := make(chan error, 1)
	go func() { done <- c.Do(ctx, "DEBUG", "SLEEP", "0.5").Err() }()
	testkit.WaitFor(t, 5*time.Second, "the server sleeping in DEBUG SLEEP", in.Sleeping)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if in.Sleeping() {
		t.Error("the server is still sleeping after DEBUG SLEEP answered")
	}
}
