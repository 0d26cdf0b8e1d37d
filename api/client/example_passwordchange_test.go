package client_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/tollgate-auth/tollgate/api/client"
)

// The route that changes a password tells tollgate once the change has
// taken effect, from the end user's address as the Guard's checks see it,
// and answers the end user whatever tollgate said: an error is logged,
// never shown. Here a stand-in tollgate prints what it was sent.
func ExampleGuard_PasswordChanged() {
	tollgate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Println(r.URL.Path, string(body))
		io.WriteString(w, `{"action":"proceed"}`)
	}))
	defer tollgate.Close()
	tg, err := client.New(client.Config{BaseURL: tollgate.URL})
	if err != nil {
		panic(err)
	}
	guard, err := client.NewGuard(client.GuardConfig{Client: tg, AccountField: "username"})
	if err != nil {
		panic(err)
	}
	changePassword := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		account := "alice@example.com" // the signed-in user's login name, from your session
		// ... verify the old password and store the new one here ...
		if err := guard.PasswordChanged(r, account); err != nil {
			slog.Warn("tollgate: password change not reported", "err", err)
		}
		http.Redirect(w, r, "/account", http.StatusSeeOther)
	})
	r := httptest.NewRequest(http.MethodPost, "/account/password", strings.NewReader(""))
	r.RemoteAddr = "203.0.113.7:40000"
	w := httptest.NewRecorder()
	changePassword.ServeHTTP(w, r)
	fmt.Println(w.Code)
	// Output:
	// /v1/report {"flow":"login","account":"alice@example.com","ip":"203.0.113.7","outcome":"password_changed"}
	// 303
}
