package client_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/tollgate-auth/tollgate/api/client"
)

// After a success report, keep its device token; send it with later checks.
func ExampleDeviceCookie_Set() {
	var cookie client.DeviceCookie // __Host-tollgate-device, 90 days
	rec := httptest.NewRecorder()
	if err := cookie.Set(rec, "eyJhbGciOiJIUzI1NiJ9.e30.mot8bV5PMCE"); err != nil {
		panic(err)
	}
	fmt.Println(rec.Header().Get("Set-Cookie"))
	// Output:
	// __Host-tollgate-device=eyJhbGciOiJIUzI1NiJ9.e30.mot8bV5PMCE; Path=/; Max-Age=7776000; HttpOnly; Secure; SameSite=Lax
}

func ExampleDeviceCookie_Token() {
	var cookie client.DeviceCookie
	r := httptest.NewRequest(http.MethodPost, "/login", nil)
	fmt.Printf("%q\n", cookie.Token(r)) // none yet
	r.Header.Set("Cookie", "session=s1; __Host-tollgate-device=eyJhbGciOiJIUzI1NiJ9.e30.mot8bV5PMCE")
	fmt.Printf("%q\n", cookie.Token(r))
	r.Header.Set("Cookie", `__Host-tollgate-device="not what Set writes"`)
	fmt.Printf("%q\n", cookie.Token(r))
	// Output:
	// ""
	// "eyJhbGciOiJIUzI1NiJ9.e30.mot8bV5PMCE"
	// ""
}

// Forget this device, as when its owner asks to.
func ExampleDeviceCookie_Clear() {
	cookie, err := client.NewDeviceCookie(client.DeviceCookieConfig{Name: "__Host-otp-device"})
	if err != nil {
		panic(err)
	}
	rec := httptest.NewRecorder()
	cookie.Clear(rec)
	fmt.Println(rec.Header().Get("Set-Cookie"))
	// Output:
	// __Host-otp-device=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax
}
