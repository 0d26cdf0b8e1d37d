package policyfile

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate-auth/tollgate/authguard"
)

// Error is a mistake in a policy file, at a line of it. Path is where, in
// the file's terms: "flows.login", "flows.login.rules[ip_rate]". Err says
// what, naming the file's keys; when authguard found the mistake it
// unwraps to authguard's *FieldError or *RuleError, which name Go fields.
// Line is 0 when no line of the file is to blame (a mistake of the whole
// policy, or of a built-in flow).
type Error struct {
	Line int
	Path string
	Err  error
}

func (e *Error) Error() string {
	msg := e.Err.Error()
	switch s, ok := e.Err.(*said); {
	case e.Path == "":
	case ok:
		msg = joinAs(e.Path, msg, s.of)
	default:
		msg = join(e.Path, msg)
	}
	if e.Line > 0 {
		return "line " + strconv.Itoa(e.Line) + ": " + msg
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// errorAt is an *Error at line, naming path, with the message of format.
func errorAt(line int, path, format string, args ...any) *Error {
	return &Error{Line: line, Path: path, Err: fmt.Errorf(format, args...)}
}

// join puts a name before config's own message msg, after a space when
// msg is said of the name ("mode must be ..."), else after a colon ("tls:
// give cert_file and key_file").
func join(name, msg string) string { return joinAs(name, msg, saysOf(msg)) }

// saysOf reports whether msg, a message config wrote, is said of a name,
// by its first word. Only config's own words (and the proxy's route
// errors', which say no more) are read so; authguard's errors say it as
// data, FieldError.Predicate.
func saysOf(msg string) bool {
	word, _, _ := strings.Cut(msg, " ")
	switch word {
	case "must", "is", "are", "has", "names", "applies", "takes":
		return true
	}
	return false
}

// joinAs puts a name before msg: after a space when msg is said of the name
// (of), else after a colon. Without a name, msg stands alone.
func joinAs(name, msg string, of bool) string {
	switch {
	case name == "":
		return msg
	case of:
		return name + " " + msg
	}
	return name + ": " + msg
}

// said is another package's error in the file's words: Error says msg,
// and errors.As finds the error beneath. of says that msg is said of the
// Error's path and reads after it ("flows.login.rules[r] must be ...");
// else it is set apart with a colon.
type said struct {
	msg string
	err error
	of  bool
}

func (s *said) Error() string { return s.msg }
func (s *said) Unwrap() error { return s.err }

// decodeError is the *Error of a failed yaml decode at path: the line of
// an *Error from an unmarshaler, or of a yaml type error.
func decodeError(path string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		c := *e
		if c.Path == "" {
			c.Path = path
		}
		return &c
	}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		// The yaml package says where as text only: "line 3: cannot ...".
		line, msg := 0, te.Errors[0]
		if l, rest, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": "); ok && strings.HasPrefix(msg, "line ") {
			if n, err := strconv.Atoi(l); err == nil {
				line, msg = n, rest
			}
		}
		msgs := append([]string{msg}, te.Errors[1:]...)
		return &Error{Line: line, Path: path, Err: &said{msg: strings.Join(msgs, "; "), err: err}}
	}
	return &Error{Path: path, Err: err}
}

// lineIndex is the line of every key of a flows mapping, by its path:
// "flows.login", "flows.login.mode", "flows.login.rules[ip_rate]",
// "flows.otp_send.prices.sms.GB". It is built once, from the node tree.
type lineIndex map[string]int

func indexLines(n *yaml.Node) lineIndex {
	idx := lineIndex{}
	idx.add("flows", n)
	return idx
}

func (idx lineIndex) add(path string, n *yaml.Node) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := path + "." + n.Content[i].Value
			idx[p] = n.Content[i].Line
			idx.add(p, n.Content[i+1])
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			p := path + "[" + strconv.Itoa(i) + "]"
			if c.Kind == yaml.MappingNode {
				for j := 0; j+1 < len(c.Content); j += 2 {
					if c.Content[j].Value == "name" {
						p = path + "[" + c.Content[j+1].Value + "]"
					}
				}
			}
			if _, ok := idx[p]; !ok {
				idx[p] = c.Line
			}
			idx.add(p, c)
		}
	}
}

// flowFieldNames names a Flow's fields in the file: name says it in a message
// ("" for an error that says it itself), key is the field's key, whose line
// is the error's; without one the error is at the flow's line.
var flowFieldNames = map[string]struct{ name, key string }{
	"Name":                          {"a flow name", ""},
	"DeviceTrust":                   {"device_trust", "device_trust"},
	"Grouping":                      {"", ""},
	"FailClosedRetry":               {"fail_closed_retry", "fail_closed_retry"},
	"SamePasswordWindow":            {"same_password_window", "same_password_window"},
	"AttemptTTL":                    {"attempt_ttl", "attempt_ttl"},
	"DeviceTokenTTL":                {"device_token_ttl", "device_token_ttl"},
	"Verifies":                      {"verifies", "verifies"},
	"SuccessClears":                 {"success_clears", "success_clears"},
	"RevokeDevicesOnPasswordChange": {"revoke_devices_on_password_change", "revoke_devices_on_password_change"},
	"Rules":                         {"a flow", ""},
	"Send.Prices":                   {"prices", "prices"},
	"Send.OwnerCodes":               {"owner_codes", "owner_codes"},
	"Send.PrefixDigits":             {"destination_prefix_digits", "destination_prefix_digits"},
	"Send.DenyTypes":                {"deny_number_types", "deny_number_types"},
	"Send.AllowCountries":           {"allow_countries", "allow_countries"},
	"Send.DenyCountries":            {"deny_countries", "deny_countries"},
	"Notices.Emit":                  {"events.emit", "events.emit"},
	"Notices.Window":                {"events.window", "events.window"},
	"Notices.UnderAttackFailures":   {"events.under_attack_failures", "events.under_attack_failures"},
}

// ruleFieldNames names a Rule's fields in the file, as flowFieldNames does
// a Flow's; a rule's error is at the rule's line.
var ruleFieldNames = map[string]string{
	"Name": "a rule name", "Key": "key", "Reason": "reason", "Subject": "subject", "Algorithm": "algorithm",
	"PriceCost": "cost: price", "Cost": "cost", "DeviceFree": "device_free", "DeviceSlots": "device_slots", "Of": "of",
	"Backoff": "", "Windows": "", "Rate": "",
}

// sendOnly is what a flow that is not a send flow says of send settings.
const sendOnly = "deny_number_types, allow_countries, deny_countries, destination_prefix_digits, prices and owner_codes are for send flows (kind: send)"

// flowField is the name and key of a flow's field in the file; the key is
// a path below the flow ("prices.sms.GB").
func flowField(field string) (name, key string) {
	if n, ok := flowFieldNames[field]; ok {
		return n.name, n.key
	}
	// Send.Prices[sms].Default, Send.Prices[sms].Countries, Send.Prices[sms].Countries[GB]
	if rest, ok := strings.CutPrefix(field, "Send.Prices["); ok {
		ch, rest, _ := strings.Cut(rest, "]")
		key = "prices." + ch
		switch {
		case rest == ".Default":
			key += ".default"
		case strings.HasPrefix(rest, ".Countries["):
			key += "." + strings.TrimSuffix(strings.TrimPrefix(rest, ".Countries["), "]")
		}
		return key, key
	}
	return field, ""
}

// fieldError is authguard's error err in the file's words, at its line:
// the key's (from f.lines, the index of the file that last wrote the flow),
// the rule's or the flow's.
func (f *flowFile) fieldError(flow string, err error) error {
	path := "flows." + flow
	var fe *authguard.FieldError
	var re *authguard.RuleError
	switch {
	case errors.As(err, &fe) && fe.Rule != "":
		name, ok := ruleFieldNames[fe.Field]
		if !ok {
			name = fe.Field
		}
		return &Error{Line: f.ruleLine(fe.Rule), Path: path + ".rules[" + fe.Rule + "]", Err: saidOf(name, fe, err)}
	case errors.As(err, &re):
		// A RuleError's Err is a sentence of its own.
		return &Error{Line: f.ruleLine(re.Rule), Path: path + ".rules[" + re.Rule + "]", Err: &said{msg: re.Err.Error(), err: err}}
	case errors.As(err, &fe):
		line := f.line
		if l := f.lines[path+"."+keyOf(fe.Field)]; l > 0 {
			line = l
		}
		if fe.Field == "Send" {
			return &Error{Line: line, Path: path, Err: &said{msg: sendOnly, err: err}}
		}
		name, _ := flowField(fe.Field)
		return &Error{Line: line, Path: path, Err: saidOf(name, fe, err)}
	}
	return &Error{Line: f.line, Path: path, Err: err}
}

// saidOf is authguard's field error fe (err, unwrapped) in the file's
// words: fe's message after name, the field's name in the file, as
// fe.Predicate says; without a name, the message alone, said of the
// Error's path as fe.Predicate says.
func saidOf(name string, fe *authguard.FieldError, err error) *said {
	if name == "" {
		return &said{msg: fe.Err.Error(), err: err, of: fe.Predicate}
	}
	return &said{msg: joinAs(name, fe.Err.Error(), fe.Predicate), err: err}
}

func keyOf(field string) string {
	_, key := flowField(field)
	if key == "" {
		return "\x00" // no line of its own
	}
	return key
}

// syntaxError is the *Error of a file that is not YAML, at the line the
// yaml package names in its text ("yaml: line 3: did not find ...").
func syntaxError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if l, rest, ok := strings.Cut(strings.TrimPrefix(msg, "line "), ": "); ok && strings.HasPrefix(msg, "line ") {
		if n, err2 := strconv.Atoi(l); err2 == nil {
			return &Error{Line: n, Err: &said{msg: "not YAML: " + rest, err: err}}
		}
	}
	return &Error{Err: &said{msg: "not YAML: " + msg, err: err}}
}

// at places e in a file whose keys are at lines: a path without a line
// gets the line of its path or of the nearest key above it the file wrote;
// a line without a path gets the path of the deepest key on that line.
func (e *Error) at(lines lineIndex) *Error {
	c := *e
	if c.Line == 0 {
		for p := c.Path; p != "" && c.Line == 0; p = parentPath(p) {
			c.Line = lines[p]
		}
	}
	if c.Path == "" && c.Line > 0 {
		for p, l := range lines {
			if l == c.Line && (len(p) > len(c.Path) || len(p) == len(c.Path) && p < c.Path) {
				c.Path = p
			}
		}
	}
	return &c
}

// parentPath is the path of the mapping or list holding path's last key:
// "store.redis" for "store.redis.url", "auth.keys" for "auth.keys[0]".
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i > 0 {
		return path[:i]
	}
	return ""
}
