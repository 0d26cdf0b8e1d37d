package attack

// The searches run the engine for every strategy they try: garbage of keys,
// verdicts and tokens. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
