package api

import (
	"fmt"
	"time"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// decodeRoutes are the request bodies the API decodes: each route's keys
// and a new value of its wire type.
var decodeRoutes = []struct {
	name string
	fs   fields
	new  func() any
}{
	{"check", checkFields, func() any { return new(checkBody) }},
	{"report", reportFields, func() any { return new(reportBody) }},
	{"send", sendFields, func() any { return new(sendBody) }},
	{"explain", explainFields, func() any { return new(explainBody) }},
	{"reset", resetFields, func() any { return new(resetBody) }},
	{"allow", allowFields, func() any { return new(wire.EntryRequest) }},
	{"deny", denyFields, func() any { return new(wire.EntryRequest) }},
	{"remove", removeFields, func() any { return new(wire.RemoveRequest) }},
}

// DecodeRoutes is the number of decodeRoutes.
var DecodeRoutes = len(decodeRoutes)

// DecodeOutcomes decodes body as route i's request with the scanning
// decoder and with the go-json-experiment one, and describes each outcome:
// the route, then the problem (kind, field, detail) or the keys present and
// the decoded value.
func DecodeOutcomes(i int, body []byte) (scan, strict string) {
	r := decodeRoutes[i]
	describe := func(decode func([]byte, fields, any) (uint64, error)) string {
		v := r.new()
		present, err := decode(body, r.fs, v)
		if err != nil {
			if pe, ok := err.(*problemError); ok {
				return fmt.Sprintf("%s: problem %s field=%q detail=%q", r.name, pe.kind.slug, pe.field, pe.detail)
			}
			return fmt.Sprintf("%s: error %v", r.name, err)
		}
		return fmt.Sprintf("%s: present=%b value=%#v", r.name, present, v)
	}
	return describe(decodeJSONScan), describe(decodeJSON)
}

// SetClock makes the metrics' sampled log lines read now instead of
// time.Now.
func (m *Metrics) SetClock(now func() time.Time) { m.unsettledLog.now = now }
