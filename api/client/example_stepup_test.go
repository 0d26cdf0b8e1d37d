package client_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/api/wire"
)

// Breached sends five hex digits of the password's SHA-1 and matches the
// rest in the range that comes back. Here a stand-in tollgate answers the
// range of "password" (5BAA6) with its line among two padding lines.
func ExampleClient_Breached() {
	tollgate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("asked for", r.URL.Path)
		io.WriteString(w, "0018A45C4D1DEF81644B54AB7F969B88D65:0\r\n"+
			"1E4C9B93F3F0682250B6CF8331B7EE68FD8:9659365\r\n"+
			"FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF:0\r\n")
	}))
	defer tollgate.Close()
	tg, err := client.New(client.Config{BaseURL: tollgate.URL})
	if err != nil {
		panic(err)
	}
	breached, err := tg.Breached(context.Background(), "password")
	fmt.Println(breached, err)
	// Output:
	// asked for /v1/breached/5BAA6
	// true <nil>
}

// A success that tollgate answers step_up signs no one in: the handler's
// redirect and session cookie are dropped, and the Guard sends a code
// through SendCode and serves the page that asks for it. Here a stand-in
// tollgate answers every report step_up.
func ExampleGuardConfig_sendCode() {
	tollgate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/check":
			io.WriteString(w, `{"action":"proceed","attempt":"a"}`)
		case "/v1/report":
			io.WriteString(w, `{"action":"step_up","attempt":"ticket","reasons":["breached_password"]}`)
		default:
			http.NotFound(w, r) // no breached-password corpus: not breached
		}
	}))
	defer tollgate.Close()
	tg, err := client.New(client.Config{BaseURL: tollgate.URL})
	if err != nil {
		panic(err)
	}
	guard, err := client.NewGuard(client.GuardConfig{
		Client: tg, AccountField: "username",
		SendCode: func(ctx context.Context, account, code string) error {
			fmt.Println("a code goes to", account) // your mailer
			return nil
		},
	})
	if err != nil {
		panic(err)
	}
	login := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, _ := client.AttemptFrom(r.Context()).Report(r.Context(), wire.OutcomeSuccess)
		http.SetCookie(w, &http.Cookie{Name: "session", Value: "s"}) // dropped on step_up
		http.Redirect(w, r, "/", http.StatusSeeOther)
		fmt.Println("report:", v.Action)
	})
	form := url.Values{"username": {"bob"}, "password": {"builder-42"}}
	r := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	w := httptest.NewRecorder()
	guard.Middleware(login).ServeHTTP(w, r)
	fmt.Println(w.Code, strings.Contains(w.Body.String(), `name="tollgate_code"`))
	for _, c := range w.Result().Cookies() {
		fmt.Println("cookie:", c.Name)
	}
	// Output:
	// report: step_up
	// a code goes to bob
	// 200 true
	// cookie: __Host-tollgate-step-up
}
