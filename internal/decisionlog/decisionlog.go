// Package decisionlog writes and reads tollgate's decision log: one JSON
// line per check, report and send, with the verdict and the call's
// subjects as the keyed hashes the store keys them by (never an
// identifier), for replaying a week of traffic through a candidate policy
// (tollgate-lab replay).
package decisionlog

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Line is one decision. Empty strings and false are parts the call did not
// have; the JSON leaves them out.
type Line struct {
	// Time is when the call was decided, RFC 3339 in UTC.
	Time time.Time `json:"time"`
	// Tenant, Flow and Call ("check", "report" or "send") say which call.
	Tenant string `json:"tenant"`
	Flow   string `json:"flow"`
	Call   string `json:"call"`
	// Outcome is a report's: "failure" or "success".
	Outcome string `json:"outcome,omitempty"`
	// Action, DelayMS and Reasons are the verdict answered; Computed,
	// ComputedDelayMS and ComputedReasons the one the policy computed (they
	// differ in shadow mode only; ComputedDelayMS is written only then).
	Action          string   `json:"action"`
	DelayMS         int64    `json:"delay_ms,omitempty"`
	Reasons         []string `json:"reasons,omitempty"`
	Computed        string   `json:"computed"`
	ComputedDelayMS int64    `json:"computed_delay_ms,omitempty"`
	ComputedReasons []string `json:"computed_reasons,omitempty"`
	// Source is which store answered: "store", "fallback" or "none".
	Source string `json:"source"`
	// Account, IP (IPv4 /32 or IPv6 /64), IP56, IP48, Fingerprint,
	// Destination and DestinationPrefix are keyed hashes (see
	// authguard.EventSubjects); IPv6 says the address's family.
	Account           string `json:"account,omitempty"`
	IP                string `json:"ip,omitempty"`
	IP56              string `json:"ip56,omitempty"`
	IP48              string `json:"ip48,omitempty"`
	IPv6              bool   `json:"ipv6,omitempty"`
	Fingerprint       string `json:"fingerprint,omitempty"`
	Destination       string `json:"destination,omitempty"`
	DestinationPrefix string `json:"destination_prefix,omitempty"`
	// Channel and Region are a send's channel and its phone's region.
	Channel string `json:"channel,omitempty"`
	Region  string `json:"region,omitempty"`
	// Device is the id of the call's valid device token, Issued the id of
	// the token a success report returned, Attempt the attempt a check's
	// proceed reserved or a report settled: random ids tollgate made.
	Device  string `json:"device,omitempty"`
	Issued  string `json:"issued,omitempty"`
	Attempt string `json:"attempt,omitempty"`
}

func reasons(rs []authguard.Reason) []string {
	if len(rs) == 0 {
		return nil
	}
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

// FromEvent is the line of an event decided at t. An event without
// Subjects (an engine without RecordSubjects) gives a line without them.
func FromEvent(ev authguard.Event, t time.Time) Line {
	l := Line{
		Time: t.UTC(), Tenant: ev.Tenant, Flow: ev.Flow, Call: ev.Call,
		Action: ev.Answer.Action.String(), DelayMS: ev.Answer.Delay.Milliseconds(), Reasons: reasons(ev.Answer.Reasons),
		Computed: ev.Computed.Action.String(), ComputedReasons: reasons(ev.Computed.Reasons), Source: ev.Source.String(),
		Region: ev.Region,
	}
	if ev.Computed.Action != ev.Answer.Action || ev.Computed.Delay != ev.Answer.Delay {
		l.ComputedDelayMS = ev.Computed.Delay.Milliseconds()
	}
	if ev.Call == "report" {
		l.Outcome = ev.Outcome.String()
	}
	if ev.Call == "send" {
		l.Channel = ev.Channel.String()
	}
	if s := ev.Subjects; s != nil {
		l.Account, l.IP, l.IP56, l.IP48, l.IPv6 = s.Account, s.IP, s.IP56, s.IP48, s.IPv6
		l.Fingerprint, l.Destination, l.DestinationPrefix = s.Fingerprint, s.Destination, s.DestinationPrefix
		l.Device, l.Issued, l.Attempt = s.Device, s.Issued, s.Attempt
	}
	return l
}

// QueueLength is how many lines a Writer holds before it drops.
const QueueLength = 4096

// Writer writes lines to an io.Writer from its own goroutine, so that a
// call never waits for the disk. Lines beyond QueueLength waiting are
// dropped and counted (Dropped), never blocking a verdict.
type Writer struct {
	lines   chan Line
	done    chan struct{}
	now     func() time.Time
	dropped atomic.Int64
	written atomic.Int64
	err     error
	once    sync.Once
}

// NewWriter starts a Writer on w; now dates the lines (time.Now if nil).
// Close flushes and stops it.
func NewWriter(w io.Writer, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	dw := &Writer{lines: make(chan Line, QueueLength), done: make(chan struct{}), now: now}
	go dw.run(w)
	return dw
}

func (dw *Writer) run(w io.Writer) {
	defer close(dw.done)
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case l, ok := <-dw.lines:
			if !ok {
				if err := bw.Flush(); err != nil && dw.err == nil {
					dw.err = err
				}
				return
			}
			if err := enc.Encode(l); err != nil && dw.err == nil {
				dw.err = err
			}
			dw.written.Add(1)
		case <-tick.C:
			if err := bw.Flush(); err != nil && dw.err == nil {
				dw.err = err
			}
		}
	}
}

// Observe queues the event's line; it never blocks. It is an
// authguard.Config.Observe hook.
func (dw *Writer) Observe(ev authguard.Event) {
	select {
	case dw.lines <- FromEvent(ev, dw.now()):
	default:
		dw.dropped.Add(1)
	}
}

// Dropped is how many lines were dropped because the queue was full.
func (dw *Writer) Dropped() int64 { return dw.dropped.Load() }

// Close writes what is queued, flushes, and returns the first write error.
// Observe must not be called after Close.
func (dw *Writer) Close() error {
	dw.once.Do(func() { close(dw.lines) })
	<-dw.done
	return dw.err
}
