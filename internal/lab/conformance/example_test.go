package conformance_test

import (
	"context"
	"fmt"

	"github.com/tollgate-auth/tollgate/internal/config"
	"github.com/tollgate-auth/tollgate/internal/lab/conformance"
)

// The built-in policy against NIST SP 800-63B-4: each requirement's status,
// and how login meets §3.2.2.
func ExampleRun() {
	rep, err := conformance.Run(context.Background(), conformance.Options{Profile: conformance.ProfileNIST})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range rep.Requirements {
		fmt.Println(r.Status, r.ID)
	}
	fmt.Println(rep.Requirements[0].How[0])
	// Output:
	// pass 3.2.2
	// pass 3.2.2-new-code
	// pass 3.1.3-attempts
	// caller 3.1.3-lifetime
	// login: at most 90 failed checks per account in any 24h (account_backoff 62; device_backoff 13 shared + 3 devices x 5 of their own)
}

// A send flow's cap on the codes one destination gets in any 24 hours.
func ExampleDestinationCodes() {
	c, ok := conformance.DestinationCodes(config.DefaultPolicy().Flow("otp_send"))
	fmt.Println(c.Max, c.Rule, ok)
	// Output: 10 destination_daily true
}
