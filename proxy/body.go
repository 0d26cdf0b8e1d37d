package proxy

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/url"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json"
)

// fields are what a route reads of a request: the values of its Account,
// Password, Destination and ChannelField, "" when absent.
type fields struct {
	account, password, destination, channel string
}

// Errors of reading a route's request. Each is answered 400 (415 for
// errUnsupportedType) and the request never reaches the upstream: a body
// the proxy cannot read the way the upstream does could carry a
// credential the proxy never saw.
var (
	errMalformed       = errors.New("proxy: the request's fields do not parse")
	errRepeated        = errors.New("proxy: a field the route reads is given twice")
	errUnsupportedType = errors.New("proxy: the body's content type is not the route's")
	errNotString       = errors.New("proxy: a field the route reads is not a string")
)

// maxFormParts bounds the parts of a multipart body read: a form has a
// handful.
const maxFormParts = 256

// readFields reads rt's fields from a request's query string and body
// (whole, within the route's bound), by the route's Body format.
func readFields(rt *Route, query, contentType string, body []byte) (fields, error) {
	names := [4]string{rt.Account, rt.Password, rt.Destination, rt.ChannelField}
	var vals [4]string
	var err error
	if rt.Body == JSON {
		vals, err = jsonFields(names, contentType, body)
	} else {
		vals, err = formFields(names, query, contentType, body)
	}
	if err != nil {
		return fields{}, err
	}
	f := fields{account: vals[0], password: vals[1], destination: vals[2], channel: vals[3]}
	if rt.Channel != "" {
		f.channel = rt.Channel
	}
	return f, nil
}

// formFields returns the value of each non-empty name, from the query
// string and a urlencoded or multipart body together. A name given twice,
// in one or across both, is errRepeated: PHP keeps the last, Django's
// QueryDict.get the last and a Go server the first, so one value could
// be checked here and another by the upstream. A body of another content
// type is not read (PHP and Django do not read it into their form
// fields).
func formFields(names [4]string, query, contentType string, body []byte) ([4]string, error) {
	var vals [4]string
	var seen [4]bool
	take := func(name, value string) error {
		for i, n := range names {
			if n != "" && n == name {
				if seen[i] {
					return errRepeated
				}
				seen[i], vals[i] = true, value
			}
		}
		return nil
	}
	if err := urlencoded(query, take); err != nil {
		return vals, err
	}
	if len(body) == 0 {
		return vals, nil
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		// No content type, or one that does not parse: the upstream reads
		// no form fields from it either.
		return vals, nil
	}
	switch mt {
	case "application/x-www-form-urlencoded":
		return vals, urlencoded(string(body), take)
	case "multipart/form-data":
		boundary := params["boundary"]
		if boundary == "" {
			return vals, errMalformed
		}
		mr := multipart.NewReader(bytes.NewReader(body), boundary)
		for n := 0; ; n++ {
			if n == maxFormParts {
				return vals, errMalformed
			}
			p, err := mr.NextRawPart() // no Content-Transfer-Encoding decoding: neither PHP nor Django does it
			if err == io.EOF {
				return vals, nil
			}
			if err != nil {
				return vals, errMalformed
			}
			name := p.FormName()
			if name == "" || p.FileName() != "" { // a file is not a form field
				continue
			}
			if !wanted(names, name) {
				continue
			}
			v, err := io.ReadAll(p)
			if err != nil {
				return vals, errMalformed
			}
			if err := take(name, string(v)); err != nil {
				return vals, err
			}
		}
	}
	return vals, nil
}

// wanted reports whether name is one of names.
func wanted(names [4]string, name string) bool {
	for _, n := range names {
		if n != "" && n == name {
			return true
		}
	}
	return false
}

// urlencoded calls take with each key and value of s (a query string or
// urlencoded body) whose key is wanted. A key or value that does not
// unescape is errMalformed, as is a ";" separator (which Go refuses and
// other servers read as "&").
func urlencoded(s string, take func(name, value string) error) error {
	for s != "" {
		var pair string
		pair, s, _ = strings.Cut(s, "&")
		if strings.IndexByte(pair, ';') >= 0 {
			return errMalformed
		}
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		k, err := url.QueryUnescape(k)
		if err != nil {
			return errMalformed
		}
		v, err = url.QueryUnescape(v)
		if err != nil {
			return errMalformed
		}
		if err := take(k, v); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields returns the string each non-empty pointer of names points to
// in body, one JSON value: "" when the pointer finds nothing or null. A
// body that is not JSON, or has an object with a name twice (which
// parsers resolve differently) or invalid UTF-8, is errMalformed; a value
// found that is not a string is errNotString. An empty body has no
// fields. The content type, when given, must be JSON's.
func jsonFields(names [4]string, contentType string, body []byte) ([4]string, error) {
	var vals [4]string
	if len(bytes.TrimSpace(body)) == 0 {
		return vals, nil
	}
	if contentType != "" {
		mt, _, err := mime.ParseMediaType(contentType)
		if err != nil || !(mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")) {
			return vals, errUnsupportedType
		}
	}
	var doc any
	if err := json.Unmarshal(body, &doc); err != nil { // refuses duplicate names and invalid UTF-8
		return vals, errMalformed
	}
	for i, n := range names {
		if n == "" {
			continue
		}
		tokens, err := parsePointer(n)
		if err != nil {
			return vals, errMalformed
		}
		v, ok := lookup(doc, tokens)
		if !ok || v == nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			return vals, errNotString
		}
		vals[i] = s
	}
	return vals, nil
}

// parsePointer splits an RFC 6901 JSON pointer into its reference tokens,
// unescaped ("~1" is "/", "~0" is "~"). "" points to the whole document.
func parsePointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, errors.New(`a JSON pointer starts with "/" (RFC 6901)`)
	}
	var tokens []string
	for tok := range strings.SplitSeq(p[1:], "/") {
		for i := 0; i < len(tok); i++ {
			if tok[i] == '~' && (i+1 == len(tok) || tok[i+1] != '0' && tok[i+1] != '1') {
				return nil, errors.New(`"~" in a JSON pointer must be "~0" or "~1" (RFC 6901)`)
			}
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		tokens = append(tokens, tok)
	}
	return tokens, nil
}

// lookup walks doc, a value json.Unmarshal made into an any, along
// tokens. An array index is decimal digits without a leading zero.
func lookup(doc any, tokens []string) (any, bool) {
	v := doc
	for _, tok := range tokens {
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[tok]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			if tok == "" || len(tok) > 1 && tok[0] == '0' {
				return nil, false
			}
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

// canonicalJSON is the JSON value b in one canonical spelling: decoded and
// encoded again, object names sorted, so that two spellings of one value
// compare equal.
func canonicalJSON(b []byte) ([]byte, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	return json.Marshal(v, json.Deterministic(true))
}
