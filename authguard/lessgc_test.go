package authguard

// The engine's tests make garbage of keys, verdicts and tokens on every
// call. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
