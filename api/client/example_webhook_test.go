package client_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/tollgate-auth/tollgate/api/client"
)

// A receiver reads the raw body, verifies it, and answers 2xx once the
// event is handled (or was already: delivery is at least once).
func ExampleVerifyWebhook() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // from tollgate's endpoint configuration
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		e, err := client.VerifyWebhook(secret, r.Header, body, time.Now())
		if err != nil {
			http.Error(w, "bad webhook", http.StatusBadRequest) // not errors' text: answer a forger nothing
			if errors.Is(err, client.ErrWebhookSecret) {
				fmt.Println("fix the configured secret")
			}
			return
		}
		// Deduplicate by e.ID, then act on the event.
		fmt.Println(e.Type, e.Data.Flow, e.Data.Ref)
		w.WriteHeader(http.StatusNoContent)
	})

	body := `{"type":"login.new_device","timestamp":"2026-01-01T00:00:00Z","tenant":"default","data":{"flow":"login","rule":"new_device","reason":"new_device","subject":"alice@example.com","ref":"user-42","details":{}}}`
	r := httptest.NewRequest(http.MethodPost, "/tollgate-events", strings.NewReader(body))
	for k, v := range signedHeader(secret, "msg_2zJ3dK8m1QwE5rTt9YvXcB", time.Now().Unix(), body) {
		r.Header[k] = v
	}
	rec := httptest.NewRecorder()
	handler.ServeHTTP(rec, r)
	fmt.Println(rec.Code)

	forged := httptest.NewRequest(http.MethodPost, "/tollgate-events", strings.NewReader(strings.Replace(body, "user-42", "user-1", 1)))
	forged.Header = r.Header.Clone()
	rec = httptest.NewRecorder()
	handler.ServeHTTP(rec, forged)
	fmt.Println(rec.Code)
	// Output:
	// login.new_device login user-42
	// 204
	// 400
}
