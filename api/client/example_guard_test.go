package client_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// A login route behind a Guard: the handler runs only for a proceed and
// reports how the attempt ended; a delay is answered before it. Here a
// stand-in tollgate delays every attempt by 2.5 s.
func ExampleGuard_Middleware() {
	tollgate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"action":"delay","delay_ms":2500,"retry_after":3,"reasons":["account_backoff"]}`)
	}))
	defer tollgate.Close()
	tg, err := client.New(client.Config{BaseURL: tollgate.URL})
	if err != nil {
		panic(err)
	}
	guard, err := client.NewGuard(client.GuardConfig{
		Client:         tg,
		AccountField:   "username",
		FingerprintKey: []byte("32 random bytes, kept as secret!"), // crypto/rand in real life
	})
	if err != nil {
		panic(err)
	}
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ok := r.PostForm.Get("password") == "builder-42" // your password check
		outcome := wire.OutcomeFailure
		if ok {
			outcome = wire.OutcomeSuccess
		}
		client.AttemptFrom(r.Context()).Report(r.Context(), outcome)
		fmt.Println("the password was checked")
	})
	h := guard.Middleware(login)

	form := url.Values{"username": {"bob"}, "password": {"builder-42"}}
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Header().Get("Retry-After"), w.Header().Get("RateLimit"))
	fmt.Println(strings.Contains(w.Body.String(), "try again in 3 seconds"))
	// Output:
	// 429 3 "login";r=0;t=3
	// true
}
