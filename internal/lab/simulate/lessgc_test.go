package simulate

// The scenarios run the engine for every login and code they simulate:
// garbage of keys, verdicts and tokens. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
