package main

// The lab's commands run the simulator and the searches: garbage of every
// engine call. See lessgc.
import _ "github.com/tollgate-auth/tollgate/internal/testkit/lessgc"
