package api

import (
	"bytes"
	"errors"
	"sync"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// strictOptions are the go-json-experiment options of a request body's
// decoding. encoding/json has already accepted the body as one valid value
// and utf8.Valid the body as UTF-8, so nothing syntactic is left to refuse:
// duplicate names are found by readKeys at the top level only (a duplicate
// inside a value is a type error of its field), and an escape of a lone
// surrogate decodes to U+FFFD, as encoding/json decodes it. Names match
// case-sensitively, the library's default.
var strictOptions = json.JoinOptions(jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))

// keyReader is a pooled jsontext.Decoder and the bytes.Buffer it reads
// from: a decoder reads a bytes.Buffer's bytes in place, without copying.
type keyReader struct {
	buf bytes.Buffer
	dec jsontext.Decoder
}

var keyReaders = sync.Pool{New: func() any { return new(keyReader) }}

// decodeStrict decodes one JSON object that encoding/json has accepted as
// valid, with exactly the keys fs names, each at most once, into v, and
// checks that required keys are present and not null. It returns the keys
// present with a non-null value (bit i for fs[i]). The first problem in
// this order is reported: a body that is not an object; an unknown or a
// repeated key (the first in the body); a required key missing (the first
// in fs); a value of the wrong type (the first in the body).
func decodeStrict(body []byte, fs fields, v any) (present uint64, err error) {
	present, err = readKeys(body, fs)
	if err != nil {
		return 0, err
	}
	for i, f := range fs {
		if f.required && present&(1<<i) == 0 {
			return 0, newProblem(kindMissingField, f.name, "is required")
		}
	}
	if err := json.Unmarshal(body, v, strictOptions); err != nil {
		var se *json.SemanticError
		if errors.As(err, &se) {
			for name := range se.JSONPointer.Tokens() {
				if i := fs.index(name); i >= 0 {
					return 0, newProblem(kindInvalidField, fs[i].name, "must be "+fs[i].want)
				}
				break // only the top-level name
			}
		}
		// readKeys has seen every key and encoding/json the syntax:
		// nothing else is expected here.
		return 0, newProblem(kindMalformedJSON, "", "the body does not match the request schema")
	}
	return present, nil
}

// readKeys reads the top-level names of body and returns the set of fs's
// keys present with a non-null value. It refuses a body that is not an
// object, a name fs does not list and a name given twice.
func readKeys(body []byte, fs fields) (present uint64, err error) {
	kr := keyReaders.Get().(*keyReader)
	kr.buf = *bytes.NewBuffer(body)
	kr.dec.Reset(&kr.buf, strictOptions)
	defer func() {
		kr.buf = bytes.Buffer{} // keep no reference to body
		kr.dec.Reset(&kr.buf)
		keyReaders.Put(kr)
	}()
	d := &kr.dec
	if d.PeekKind() != '{' {
		return 0, newProblem(kindMalformedJSON, "", "the body must be a JSON object")
	}
	if _, err := d.ReadToken(); err != nil {
		return 0, newProblem(kindMalformedJSON, "", "the body must be a JSON object")
	}
	var seen uint64
	for d.PeekKind() == '"' {
		tok, err := d.ReadToken()
		if err != nil {
			break
		}
		k := fs.index(tok.String())
		if k < 0 {
			return 0, unknownKey(tok.String(), "is not a field of this request (keys are case-sensitive)", "the body has a key that is not a field of this request")
		}
		if seen&(1<<k) != 0 {
			return 0, newProblem(kindDuplicateField, fs[k].name, "appears more than once")
		}
		seen |= 1 << k
		if d.PeekKind() != 'n' {
			present |= 1 << k
		}
		if err := d.SkipValue(); err != nil {
			break
		}
	}
	return present, nil
}
