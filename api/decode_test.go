package api

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/tollgate-auth/tollgate/api/wire"
)

// decodeRoutes are the request bodies the API decodes: each route's fields
// and a new value of the type it decodes into.
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
	{"replay", replayFields, func() any { return new(wire.ReplayRequest) }},
	{"issue challenge", issueChallengeFields, func() any { return new(issueChallengeBody) }},
	{"verify challenge", verifyChallengeFields, func() any { return new(verifyChallengeBody) }},
	{"reload", fields{}, func() any { return new(struct{}) }},
}

// A route's fields and its Go type are one schema told twice: the library
// refuses a member the type lacks, the decoder one the fields lack. They
// name the same members with the same JSON types, except that allow
// decodes into deny's type without its action.
func TestDecodeFields_MatchTheTypesTheyDecodeInto(t *testing.T) {
	wants := map[reflect.Kind]string{reflect.String: "a string", reflect.Bool: "a boolean"}
	for _, r := range decodeRoutes {
		typ := reflect.TypeOf(r.new()).Elem()
		members := membersOf(typ)
		if r.name == "allow" {
			delete(members, "action")
		}
		if len(r.fs) > 64 {
			t.Errorf("%s: %d fields, more than a presence set holds", r.name, len(r.fs))
		}
		for _, f := range r.fs {
			i, ok := members[f.name]
			if !ok {
				t.Errorf("%s: %s is a field but %v has no member of that name", r.name, f.name, typ)
				continue
			}
			delete(members, f.name)
			if got := wants[typ.Field(i).Type.Kind()]; got != f.want {
				t.Errorf("%s: %s says it must be %s, but %v's field is a %v", r.name, f.name, f.want, typ, typ.Field(i).Type)
			}
		}
		for name := range members {
			t.Errorf("%s: %v has a member %s that the fields do not list", r.name, typ, name)
		}
	}
}

// decodeRoute decodes body as the route named and describes the outcome:
// the problem (kind, field, detail), or the members present.
func decodeRoute(t testing.TB, route string, body string) (v any, present uint64, problem string) {
	t.Helper()
	i := slices.IndexFunc(decodeRoutes, func(r struct {
		name string
		fs   fields
		new  func() any
	}) bool {
		return r.name == route
	})
	if i < 0 {
		t.Fatalf("no route %s", route)
	}
	v = decodeRoutes[i].new()
	present, err := decodeJSON([]byte(body), decodeRoutes[i].fs, v)
	if err != nil {
		pe, ok := err.(*problemError)
		if !ok {
			t.Fatalf("decoding %q: %T %v, want a *problemError", body, err, err)
		}
		return v, 0, pe.kind.slug + " " + pe.field + ": " + pe.detail
	}
	return v, present, ""
}

// Each way of being refused, and the problem it gets: the library refuses,
// the decoder picks the words. The first problem in the body is reported,
// a body that is not valid JSON being malformed whatever its members.
func TestDecodeJSON_ProblemsNameTheMemberAndWhatIsWrong(t *testing.T) {
	tests := []struct {
		name, route, body, want string
	}{
		{"a second value for a member, which two parsers could each pick one of", "check", `{"flow":"login","account":"a","account":"b"}`, "duplicate-field account: appears more than once"},
		{"the second one escaped", "check", `{"flow":"login","account":"a","\u0061ccount":"b"}`, "duplicate-field account: appears more than once"},
		{"a repeated null", "check", `{"flow":"login","ref":null,"ref":"x"}`, "duplicate-field ref: appears more than once"},
		{"a repeat after a value of the wrong type", "check", `{"flow":"login","ref":1,"ref":2}`, "duplicate-field ref: appears more than once"},
		{"a repeated unknown key, not echoed", "check", `{"alice@example.com":1,"alice@example.com":2}`, "unknown-field : the body has a key that is not a field of this request"},
		{"a name repeated inside a member's value", "check", `{"flow":{"a":1,"a":2}}`, "invalid-field flow: must be a string"},
		{"invalid UTF-8 in a string", "check", "{\"flow\":\"login\",\"account\":\"\xff\"}", "malformed-json : the body must be UTF-8"},
		{"invalid UTF-8 after a syntax error", "check", "{\"flow\" \"login\",\"account\":\"\xff\"}", "malformed-json : the body must be UTF-8"},
		{"invalid UTF-8 after a member of the wrong type", "check", "{\"flow\":1,\"account\":\"\xff\"}", "malformed-json : the body must be UTF-8"},
		{"the escape of a lone surrogate", "check", `{"flow":"login","ref":"\ud800"}`, "malformed-json : the body is not one valid JSON object (syntax error near byte 23)"},
		{"a syntax error after a member of the wrong type", "check", `{"flow":1,"a" "b"}`, "malformed-json : the body is not one valid JSON object (syntax error near byte 14)"},
		{"data after the object", "check", `{"flow":"login"} {}`, "malformed-json : the body is not one valid JSON object (syntax error near byte 17)"},
		{"cut short", "check", `{"flow":"login",`, "malformed-json : the body is not one valid JSON object (syntax error near byte 16)"},
		{"empty", "check", ``, "malformed-json : the body is empty; it must be a JSON object"},
		{"white space only", "check", " \r\n\t", "malformed-json : the body is empty; it must be a JSON object"},
		{"null", "check", ` null `, "malformed-json : the body must be a JSON object"},
		{"an array", "check", `[{"flow":"login"}]`, "malformed-json : the body must be a JSON object"},
		{"a string", "check", `"flow"`, "malformed-json : the body must be a JSON object"},
		{"a field of another request, named", "check", `{"flow":"login","outcome":"failure"}`, "unknown-field outcome: is not a field of this request (keys are case-sensitive)"},
		{"a key in another case, named", "check", `{"Flow":"login"}`, "unknown-field Flow: is not a field of this request (keys are case-sensitive)"},
		{"an identifier as a key, not echoed", "check", `{"flow":"login","+447700900123":1}`, "unknown-field : the body has a key that is not a field of this request"},
		{"deny's action on allow, which shares its type", "allow", `{"action":"block","expires_in":"1h","reason":"r"}`, "unknown-field action: is not a field of this request (keys are case-sensitive)"},
		{"deny's action on allow, null", "allow", `{"action":null,"expires_in":"1h","reason":"r"}`, "unknown-field action: is not a field of this request (keys are case-sensitive)"},
		{"anything on reload", "reload", `{"file":"/etc/shadow"}`, "unknown-field : the body has a key that is not a field of this request"},
		{"a number for a string", "check", `{"flow":1}`, "invalid-field flow: must be a string"},
		{"a string for a boolean", "check", `{"flow":"login","captcha_solved":"yes"}`, "invalid-field captcha_solved: must be a boolean"},
		{"an array for a string", "report", `{"flow":"login","outcome":"failure","attempt":[]}`, "invalid-field attempt: must be a string"},
		{"a number too large for anything", "check", `{"flow":1e999}`, "invalid-field flow: must be a string"},
		{"the first of two members of the wrong type", "check", `{"ip":1,"flow":2}`, "invalid-field ip: must be a string"},
		{"a required member missing", "report", `{"flow":"login"}`, "missing-field outcome: is required"},
		{"a required member null", "check", `{"flow":null}`, "missing-field flow: is required"},
		{"the first missing in the fields' order", "remove", `{}`, "missing-field id: is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, got := decodeRoute(t, tt.route, tt.body); got != tt.want {
				t.Errorf("%s %q:\n got %s\nwant %s", tt.route, tt.body, got, tt.want)
			}
		})
	}
}

// What is accepted, and which members count as present: null is absent,
// "" and false are present.
func TestDecodeJSON_PresentMeansGivenAndNotNull(t *testing.T) {
	tests := []struct {
		name, route, body string
		want              []string // the members present
	}{
		{"every member null but the required", "check", `{"flow":"login","account":null,"ip":null,"device_token":null,"captcha_solved":null,"password_fingerprint":null,"destination":null,"channel":null,"ref":null}`, []string{"flow"}},
		{"empty and false are given", "check", `{"flow":"","account":"","captcha_solved":false}`, []string{"flow", "account", "captcha_solved"}},
		{"white space around", "explain", " \t{ \"flow\" : \"login\" , \"ip\" : \"\" }\r\n", []string{"flow", "ip"}},
		{"escaped names", "report", `{"fl\u006fw":"login","\u006futcome":"failure"}`, []string{"flow", "outcome"}},
		{"deny's action on deny", "deny", `{"action":"captcha","expires_in":"1h","reason":"r"}`, []string{"action", "expires_in", "reason"}},
		{"nothing on reload", "reload", `{}`, nil},
		{"no optional member", "send", `{}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, present, problem := decodeRoute(t, tt.route, tt.body)
			if problem != "" {
				t.Fatalf("%s %q: %s", tt.route, tt.body, problem)
			}
			var got []string
			for _, r := range decodeRoutes {
				if r.name == tt.route {
					for i, f := range r.fs {
						if present&(1<<i) != 0 {
							got = append(got, f.name)
						}
					}
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("%s %q: present %v, want %v", tt.route, tt.body, got, tt.want)
			}
		})
	}
}

// A decoding keeps no pointer into the value it decoded once it returns:
// a pooled decoder would otherwise hold on to a request's identifiers.
func TestDecodeJSON_ADecoderKeepsNoPointerIntoTheRequest(t *testing.T) {
	d := decoders.New().(*decoder)
	for _, body := range []string{`{"flow":"login","account":"victim@example.com"}`, `{"flow":1}`} {
		var v checkBody
		_, _ = d.decode([]byte(body), checkFields, &v)
		if len(d.fields) != len(checkFields) {
			t.Fatalf("%q: the decoder held %d fields, want %d", body, len(d.fields), len(checkFields))
		}
		for i, p := range d.fields {
			if p != nil {
				t.Errorf("%q: the decoder's field %d still points at the request's %s", body, i, checkFields[i].name)
			}
		}
	}
}

// FuzzDecodeJSON decodes each body as every route's request and holds the
// outcome to what the library's own decoding into a map of raw members
// says: the body is accepted exactly when it is one object whose members
// the route lists, each a JSON type its field takes or null, with every
// required one given and not null; an accepted body's members present and
// values are the map's; a refused one gets a problem of a body's kind,
// naming a member of the route, one of another route, or none.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range []string{
		`{"flow":"login","account":"alice@example.com","ip":"203.0.113.7"}`,
		`{"flow":"login","account":"a","ip":"192.0.2.1","outcome":"failure","attempt":"x.y.z","ref":null}`,
		`{"flow":"otp_verify","captcha_solved":true,"device_token":null}`,
		`{"destination":"+447400123456","channel":"sms","ip":"192.0.2.1"}`,
		`{"ip_range":"203.0.113.0/24","action":"captcha","expires_in":"1h","reason":"r"}`,
		`{"id":"Hq3v0S2b1xY9nQe4a7LrVw","reason":"r"}`,
		`{"token":"t","nonce":"n","provider":"","response":"","remote_ip":"192.0.2.1"}`,
		`{"kind":"pow"}`,
		`{"fl\u006fw":"login","\u0061ccount":"a"}`,
		`{"flow":"login","account":"a","account":"b"}`,
		`{"flow":{"a":1,"a":2}}`,
		`{"flow":"\ud800","account":"\udc00\ud800x"}`,
		"{\"flow\":\"\xff\"}",
		`{"flow":1,"a" "b"}`,
		`{"flow":"login"} {}`,
		`{"Flow":"login"}`,
		`{"flow":1e999}`,
		`{"flow":null}`,
		`{}`, `null`, `[]`, ``, ` `, `"x"`, `1`, `true`,
	} {
		f.Add([]byte(s))
	}
	wants := map[string]string{"a string": `"`, "a boolean": "tf"}
	f.Fuzz(func(t *testing.T, body []byte) {
		var m map[string]jsontext.Value
		mErr := json.Unmarshal(body, &m) // the library's defaults: no name twice, UTF-8 only
		for _, r := range decodeRoutes {
			v := r.new()
			present, err := decodeJSON(body, r.fs, v)

			accept := mErr == nil && m != nil
			for name, raw := range m {
				i := r.fs.index(name)
				if i < 0 || raw.Kind() != 'n' && !strings.ContainsRune(wants[r.fs[i].want], rune(raw.Kind())) {
					accept = false
				}
			}
			for _, f := range r.fs {
				if raw, ok := m[f.name]; f.required && (!ok || raw.Kind() == 'n') {
					accept = false
				}
			}
			if accept != (err == nil) {
				t.Fatalf("%s %q: decoded with %v, but the library's map of it (%v) says accept = %v", r.name, body, err, mErr, accept)
			}
			if err != nil {
				pe, ok := err.(*problemError)
				if !ok || !slices.Contains([]*kind{kindMalformedJSON, kindDuplicateField, kindUnknownField, kindInvalidField, kindMissingField}, pe.kind) || pe.detail == "" {
					t.Fatalf("%s %q: %v, want a problem of a body", r.name, body, err)
				}
				if pe.field != "" && r.fs.index(pe.field) < 0 && (pe.kind != kindUnknownField || unknownKey(pe.field, "", "").field == "") {
					t.Fatalf("%s %q: %v names a field neither this route nor any other has", r.name, body, err)
				}
				continue
			}
			rv := reflect.ValueOf(v).Elem()
			members := membersOf(rv.Type())
			for i, f := range r.fs {
				raw, given := m[f.name]
				given = given && raw.Kind() != 'n'
				if got := present&(1<<i) != 0; got != given {
					t.Fatalf("%s %q: %s present = %v, want %v", r.name, body, f.name, got, given)
				}
				want := reflect.New(rv.Field(members[f.name]).Type())
				if given {
					if err := json.Unmarshal(raw, want.Interface()); err != nil {
						t.Fatalf("%s %q: %s: %v", r.name, body, f.name, err)
					}
				}
				if got := rv.Field(members[f.name]).Interface(); got != want.Elem().Interface() {
					t.Fatalf("%s %q: %s = %#v, want %#v", r.name, body, f.name, got, want.Elem().Interface())
				}
			}
		}
	})
}
