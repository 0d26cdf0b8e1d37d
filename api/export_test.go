package api

import "time"

// SetClock makes the metrics' sampled log lines read now instead of
// time.Now.
func (m *Metrics) SetClock(now func() time.Time) { m.unsettledLog.now = now }
