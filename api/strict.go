package api

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// strictOptions make go-json-experiment refuse, by itself, a body that is
// not one JSON text in UTF-8 (a syntax error, data after the value,
// invalid UTF-8 or the escape of a lone surrogate), a name given twice at
// any depth, and a member the Go type has no field for. The first two are
// the library's defaults, spelled out because the decoder relies on them.
// Names match case-sensitively, also the default.
var strictOptions = json.JoinOptions(
	jsontext.AllowDuplicateNames(false),
	jsontext.AllowInvalidUTF8(false),
	json.RejectUnknownMembers(true),
)

// errNotListed is a member the Go type has a field for but the route's
// fields do not list: allow decodes into deny's wire type, less action.
var errNotListed = errors.New("api: a member the request's fields do not list")

// decoder is one decoding's state: the addresses of the fields fs names,
// in fs's order, and which of them had a value other than null. Its
// options are strictOptions and the member hook, bound to it once; it is
// pooled, so that a decoding builds neither.
type decoder struct {
	fields  []any
	present uint64
	opts    json.Options
}

var decoders = sync.Pool{New: func() any {
	d := new(decoder)
	d.opts = json.JoinOptions(strictOptions, json.WithUnmarshalers(json.JoinUnmarshalers(
		json.UnmarshalFromFunc(func(dec *jsontext.Decoder, s *string) error { return d.member(dec, s) }),
		json.UnmarshalFromFunc(func(dec *jsontext.Decoder, b *bool) error { return d.member(dec, b) }),
	)))
	return d
}}

// member is called by the library before it decodes a string or boolean
// field (every field of a request is one), with the field's address: it
// notes a value other than null, which is how "" and an absent or null
// member differ, and refuses a field fs does not list. It leaves the
// decoding itself to the library.
func (d *decoder) member(dec *jsontext.Decoder, field any) error {
	i := slices.Index(d.fields, field)
	if i < 0 {
		return errNotListed
	}
	if dec.PeekKind() != 'n' {
		d.present |= 1 << i
	}
	return json.SkipFunc
}

// decodeJSON decodes body, one JSON object with the members fs lists, each
// at most once, into v, a pointer to a struct whose json tags name those
// members, and checks that the required ones are present and not null. It
// returns the members present with a non-null value (bit i for fs[i]).
// The library refuses all that can be wrong but a required member
// missing. One problem is reported, the first of: invalid UTF-8; the
// body's first syntax error or name given twice; a body that is not an
// object; its first unknown member or member of the wrong type; a
// required member missing (the first in fs).
func decodeJSON(body []byte, fs fields, v any) (present uint64, err error) {
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	return d.decode(body, fs, v)
}

// decode is decodeJSON with d.
func (d *decoder) decode(body []byte, fs fields, v any) (present uint64, err error) {
	d.fields, d.present = fieldAddrs(d.fields[:0], v, fs), 0
	defer clear(d.fields) // a pooled decoder keeps no pointer into v
	if err := json.Unmarshal(body, v, d.opts); err != nil {
		return 0, decodeProblem(body, fs, err)
	}
	if jsontext.Value(body).Kind() != '{' {
		return 0, notAnObject // null: a struct takes it as no change
	}
	for i, f := range fs {
		if f.required && d.present&(1<<i) == 0 {
			return 0, newProblem(kindMissingField, f.name, "is required")
		}
	}
	return d.present, nil
}

var notAnObject = newProblem(kindMalformedJSON, "", "the body must be a JSON object")

// decodeProblem describes why the library refused body with err. A body
// that is not one valid JSON text is malformed whatever its members are:
// when the library stopped at a member (it does at the first of the wrong
// type or unknown), the body is validated whole, by the library, and its
// first syntax error is reported instead, if it has one.
func decodeProblem(body []byte, fs fields, err error) *problemError {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		var raw jsontext.Value
		if verr := json.Unmarshal(body, &raw, strictOptions); verr != nil {
			err = verr
		}
	}
	var me *json.SemanticError
	switch {
	case errors.As(err, &se):
		return syntaxProblem(body, fs, se)
	case errors.As(err, &me):
		name, _ := memberOf(me.JSONPointer)
		switch i := fs.index(name); {
		case me.JSONPointer == "":
			return notAnObject
		case errors.Is(me.Err, json.ErrUnknownName) || errors.Is(me.Err, errNotListed):
			return unknownKey(name, "is not a field of this request (keys are case-sensitive)", "the body has a key that is not a field of this request")
		case i >= 0:
			return newProblem(kindInvalidField, fs[i].name, "must be "+fs[i].want)
		}
	}
	// Every field is a string or a boolean that fs lists: nothing else
	// is expected here.
	return newProblem(kindMalformedJSON, "", "the body does not match the request schema")
}

// syntaxProblem describes the syntactic error se of body.
func syntaxProblem(body []byte, fs fields, se *jsontext.SyntacticError) *problemError {
	switch {
	case !utf8.Valid(body):
		// The library reports the first error of any kind; which words
		// to say is chosen here: bytes that are not UTF-8 come first.
		return newProblem(kindMalformedJSON, "", "the body must be UTF-8")
	case len(bytes.TrimSpace(body)) == 0:
		return newProblem(kindMalformedJSON, "", "the body is empty; it must be a JSON object")
	case se.Err == jsontext.ErrDuplicateName:
		name, nested := memberOf(se.JSONPointer)
		i := fs.index(name)
		switch {
		case i < 0:
			return unknownKey(name, "is not a field of this request (keys are case-sensitive)", "the body has a key that is not a field of this request")
		case nested:
			// A name repeated inside the member's value: no member of
			// a request takes an object.
			return newProblem(kindInvalidField, fs[i].name, "must be "+fs[i].want)
		}
		return newProblem(kindDuplicateField, fs[i].name, "appears more than once")
	}
	return newProblem(kindMalformedJSON, "", "the body is not one valid JSON object (syntax error near byte "+strconv.FormatInt(se.ByteOffset, 10)+")")
}

// memberOf is the top-level member a JSON pointer into the body is in, and
// whether the pointer goes below it.
func memberOf(p jsontext.Pointer) (name string, nested bool) {
	n := 0
	for tok := range p.Tokens() {
		if n++; n == 1 {
			name = tok
		}
	}
	return name, n > 1
}

// memberIndexes are each request type's fields by their JSON member names,
// read from the json tags once per type.
var memberIndexes sync.Map // reflect.Type → map[string]int

// fieldAddrs appends to dst the address of v's field for each of fs's
// members (nil for one v has no field for, which the decode tests rule
// out).
func fieldAddrs(dst []any, v any, fs fields) []any {
	rv := reflect.ValueOf(v).Elem()
	idx, ok := memberIndexes.Load(rv.Type())
	if !ok {
		idx, _ = memberIndexes.LoadOrStore(rv.Type(), membersOf(rv.Type()))
	}
	for _, f := range fs {
		var addr any
		if i, ok := idx.(map[string]int)[f.name]; ok {
			addr = rv.Field(i).Addr().Interface()
		}
		dst = append(dst, addr)
	}
	return dst
}

// membersOf maps the JSON member names of struct type t's fields to their
// indexes.
func membersOf(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		m[name] = i
	}
	return m
}
