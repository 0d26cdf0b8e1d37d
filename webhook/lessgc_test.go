package webhook

// The tests sign and post deliveries to HTTP receivers and queue them in
// Redis: short-lived garbage of requests, bodies and signatures. See
// lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
