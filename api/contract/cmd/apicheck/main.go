// Command apicheck checks exchanges with tollgate's HTTP API against
// openapi.yaml: it reads one JSON contract.Exchange per line on standard
// input and writes one JSON contract.Result per line on standard output.
// The api package's tests run it (api/harness_test.go) so that the OpenAPI
// validator stays out of the service's module.
package main

import (
	"fmt"
	"os"
	"runtime/debug"

	"github.com/tollgate-auth/tollgate/api/contract"
)

func main() {
	// kin-openapi compiles a JSON Schema validator afresh for every body
	// and header it checks (it keeps none), so a run is mostly short-lived
	// garbage over a heap of a few MB: at the default GOGC, collecting it
	// was two fifths of the checker's CPU. Four times the heap (about 55 MB
	// over the api tests' 1,200 exchanges) spends half as much. GOGC set in
	// the environment still wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if _, err := contract.Spec(); err != nil {
		fmt.Fprintf(os.Stderr, "apicheck: openapi.yaml: %v\n", err)
		os.Exit(1)
	}
	if err := contract.Serve(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "apicheck: %v\n", err)
		os.Exit(1)
	}
}
