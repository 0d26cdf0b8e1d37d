package conformance

// The conformance runs call the engine thousands of times: garbage of keys
// and verdicts. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
