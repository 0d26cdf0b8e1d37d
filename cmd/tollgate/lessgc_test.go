package main

// The server's tests send requests through the whole service: short-lived
// garbage. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
