package webhook_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/webhook"
)

// A receiver checks every delivery with Verify before it parses the body,
// and deduplicates on webhook-id: delivery is at least once.
func ExampleVerify() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"     // the endpoint's secret, as configured in tollgate
	now := func() time.Time { return time.Unix(1614265330, 0) } // a real receiver uses time.Now

	seen := map[string]bool{}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			http.Error(w, "too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := webhook.Verify(secret, r.Header, body, 5*time.Minute, now()); err != nil {
			fmt.Println("rejected:", err)
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		id := r.Header.Get("webhook-id")
		if seen[id] {
			fmt.Println("duplicate, already handled:", id)
			w.WriteHeader(http.StatusNoContent) // a 2xx, or it is sent again
			return
		}
		seen[id] = true
		fmt.Println("accepted:", id, string(body))
		w.WriteHeader(http.StatusNoContent)
	})

	deliver := func(body, signature string) {
		r := httptest.NewRequest(http.MethodPost, "/hooks/tollgate", strings.NewReader(body))
		r.Header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
		r.Header.Set("webhook-timestamp", "1614265330")
		r.Header.Set("webhook-signature", signature)
		handler.ServeHTTP(httptest.NewRecorder(), r)
	}
	deliver(`{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	deliver(`{"test": 2432232314}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	deliver(`{"test": 1}`, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
	// Output:
	// accepted: msg_p5jXN8AQM9LWM0D4loKWxJek {"test": 2432232314}
	// duplicate, already handled: msg_p5jXN8AQM9LWM0D4loKWxJek
	// rejected: webhook: no matching signature
}
