package api

import (
	"encoding/json"
	"strconv"

	"github.com/tollgate-auth/tollgate/authguard"
)

// appendVerdict appends the JSON form of v that wire.Verdict declares to b,
// without allocating: always the same fields in the same order, numbers
// zero and strings empty where they do not apply. Its bytes are
// v.MarshalJSON()'s.
func appendVerdict(b []byte, v authguard.Verdict) []byte {
	b = append(b, `{"action":"`...)
	b = append(b, v.Action.String()...)
	b = append(b, `","delay_ms":`...)
	b = strconv.AppendInt(b, v.Delay.Milliseconds(), 10)
	b = append(b, `,"retry_after":`...)
	b = strconv.AppendInt(b, v.RetryAfter(), 10)
	b = append(b, `,"reasons":[`...)
	for i, r := range v.Reasons {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, r.String()...)
		b = append(b, '"')
	}
	b = append(b, `],"attempt":`...)
	b = appendToken(b, v.Attempt)
	b = append(b, `,"device_token":`...)
	b = appendToken(b, v.DeviceToken)
	return append(b, '}')
}

// appendToken appends s as a JSON string. Tokens are base64url and dots,
// which need no escaping, so they are copied as they are; anything else is
// escaped as encoding/json escapes strings. (strconv.AppendQuote, used
// before, writes Go escapes such as \x00, which are not JSON.)
func appendToken(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
