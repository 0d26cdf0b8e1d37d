package api

// Every request the tests send is JSON decoded and encoded, logged and
// checked: short-lived garbage. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
