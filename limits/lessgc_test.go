package limits

// The limiters' tests run many short-lived windows and buckets. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
