package redisstore

// Hinted returns how many checks were sent on a hint that an op would
// block, and how many of those hints were wrong (hints.go).
func (s *Store) Hinted() (sent, wrong int64) {
	r, w := s.hints.right.Load(), s.hints.wrong.Load()
	return r + w, w
}

// WithoutHints makes s answer every Cluster check with Reserve, for
// benchmarks that compare the two.
func (s *Store) WithoutHints() { s.hints.off = true }

// PipelineBatches makes s send every batch as a pipeline of op scripts, as
// before a batch on one node was one script.
func (s *Store) PipelineBatches() { s.pipelineBatches = true }

// Shapes returns how many shaped check scripts s keeps (shape.go).
func Shapes(s *Store) int { return s.shapes.len() }

// SetMaxShapes bounds how many shapes s keeps; 0 sends every check with
// the generic script.
func SetMaxShapes(s *Store, n int) { s.shapes.max = n }

// LuaQuote is luaQuote, for its test.
var LuaQuote = luaQuote

// ShareEveryCall makes s, built with Config.SharedRoundTrips, send every
// call in shared round trips, however few are in flight, so that tests
// that check one at a time hold the shared path to the same answers.
func ShareEveryCall(s *Store) { s.shared.after = 0 }
