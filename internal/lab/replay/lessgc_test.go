package replay

// A replay runs the engine over every line of a log: garbage of keys and
// verdicts. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
