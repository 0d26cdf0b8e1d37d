// Package simulate replays attack and user scenarios on the real engine and
// memory store with a virtual clock.
package simulate

import (
	"fmt"
	"io"
)

// Main runs `tollgate simulate` with args (the words after "simulate") and
// returns the exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "tollgate simulate: not implemented yet")
	return 2
}
