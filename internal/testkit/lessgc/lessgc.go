package lessgc

import (
	"os"
	"runtime/debug"
)

// Percent is the GOGC the importing binary runs with.
const Percent = 400

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(Percent)
	}
}
