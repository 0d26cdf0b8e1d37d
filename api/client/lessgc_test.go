package client

// Every call the tests make is JSON encoded and decoded at both ends: short-
// lived garbage. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
