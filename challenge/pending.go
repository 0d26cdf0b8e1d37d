package challenge

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Submission is a request held while its sender solves a challenge: what
// is needed to send it on once solved.
type Submission struct {
	// Method is the request's method, e.g. POST: an HTTP token of at most
	// 32 bytes.
	Method string
	// Path is the request's path and query as it was received
	// (r.URL.RequestURI()): starting with /, at most 8 KiB.
	Path string
	// ContentType is the request's Content-Type header, at most 1 KiB.
	ContentType string
	// Body is the request's body, at most Config.MaxBodyBytes.
	Body []byte
}

// Limits of a Submission beyond its body.
const (
	maxMethod      = 32
	maxPath        = 8 << 10
	maxContentType = 1 << 10
	maxBodyLimit   = 16 << 20 // the most Config.MaxBodyBytes may be
	handleBytes    = 16
	// HandleLen is the length of every handle: 16 random bytes in base64url.
	HandleLen  = (handleBytes*8 + 5) / 6
	blobFormat = 1
)

// Hold seals s for tenant and keeps it for Config.PendingTTL; it returns
// the handle that redeems it, 22 random URL-safe characters. The store
// holds only the sealed blob under a hash of the handle: neither a dump
// of it nor the page shows the body. ErrBodyTooLarge for a body over
// MaxBodyBytes; ErrStoreFull when the memory store is full.
func (c *Challenger) Hold(ctx context.Context, tenant string, s Submission) (string, error) {
	if int64(len(s.Body)) > c.cfg.MaxBodyBytes {
		return "", ErrBodyTooLarge
	}
	plain, err := encodeSubmission(s)
	if err != nil {
		return "", err
	}
	var h [handleBytes]byte
	rand.Read(h[:])
	handle := base64.RawURLEncoding.EncodeToString(h[:])
	blob := make([]byte, 1+c.aead.NonceSize(), 1+c.aead.NonceSize()+len(plain)+c.aead.Overhead())
	blob[0] = blobFormat
	rand.Read(blob[1:])
	blob = c.aead.Seal(blob, blob[1:], plain, pendingAD(tenant, handle))
	if err := c.cfg.Store.Put(ctx, pendingKey(handle), blob, c.cfg.PendingTTL); err != nil {
		return "", err
	}
	return handle, nil
}

// HoldRequest reads r's body (at most Config.MaxBodyBytes, else
// ErrBodyTooLarge) and holds it with r's method, path and content type.
func (c *Challenger) HoldRequest(ctx context.Context, tenant string, r *http.Request) (string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, c.cfg.MaxBodyBytes+1))
	if err != nil {
		return "", fmt.Errorf("challenge: reading the body: %w", err)
	}
	if int64(len(body)) > c.cfg.MaxBodyBytes {
		return "", ErrBodyTooLarge
	}
	return c.Hold(ctx, tenant, Submission{Method: r.Method, Path: r.URL.RequestURI(),
		ContentType: r.Header.Get("Content-Type"), Body: body})
}

// take removes and opens the submission held under handle for tenant:
// false when there is none (never held, expired, taken, or sealed for
// another tenant or handle).
func (c *Challenger) take(ctx context.Context, tenant, handle string) (Submission, bool, error) {
	blob, ok, err := c.cfg.Store.Take(ctx, pendingKey(handle))
	if err != nil || !ok {
		return Submission{}, false, err
	}
	ns := c.aead.NonceSize()
	if len(blob) < 1+ns || blob[0] != blobFormat {
		return Submission{}, false, nil
	}
	plain, err := c.aead.Open(nil, blob[1:1+ns], blob[1+ns:], pendingAD(tenant, handle))
	if err != nil {
		return Submission{}, false, nil
	}
	s, err := decodeSubmission(plain)
	return s, err == nil, nil
}

// pendingKey is the store key of a handle's blob: a hash, so that a dump of
// the store holds no handle that a page could post.
func pendingKey(handle string) string {
	sum := sha256.Sum256([]byte(handle))
	return "p:" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// pendingAD binds a sealed submission to its tenant and handle.
func pendingAD(tenant, handle string) []byte {
	return []byte("tollgate challenge pending\x00" + tenant + "\x00" + handle)
}

// validHandle reports whether s has a handle's form.
func validHandle(s string) bool {
	if len(s) != HandleLen {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}

// encodeSubmission writes s as: method length (1 byte), method, path
// length (2), path, content type length (2), content type, body.
func encodeSubmission(s Submission) ([]byte, error) {
	if !validMethod(s.Method) {
		return nil, errors.New("challenge: a submission's method must be an HTTP token of 1 to 32 bytes")
	}
	if s.Path == "" || s.Path[0] != '/' || len(s.Path) > maxPath {
		return nil, errors.New("challenge: a submission's path must start with / and be at most 8 KiB")
	}
	if len(s.ContentType) > maxContentType {
		return nil, errors.New("challenge: a submission's content type must be at most 1 KiB")
	}
	b := make([]byte, 0, 5+len(s.Method)+len(s.Path)+len(s.ContentType)+len(s.Body))
	b = append(b, byte(len(s.Method)))
	b = append(b, s.Method...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.Path)))
	b = append(b, s.Path...)
	b = binary.BigEndian.AppendUint16(b, uint16(len(s.ContentType)))
	b = append(b, s.ContentType...)
	return append(b, s.Body...), nil
}

// decodeSubmission reads what encodeSubmission wrote; an error for
// anything else.
func decodeSubmission(b []byte) (Submission, error) {
	bad := errors.New("challenge: a held submission does not decode")
	var s Submission
	if len(b) < 1 || len(b) < 1+int(b[0]) {
		return s, bad
	}
	s.Method, b = string(b[1:1+int(b[0])]), b[1+int(b[0]):]
	for _, f := range []*string{&s.Path, &s.ContentType} {
		if len(b) < 2 {
			return Submission{}, bad
		}
		n := int(binary.BigEndian.Uint16(b))
		if len(b) < 2+n {
			return Submission{}, bad
		}
		*f, b = string(b[2:2+n]), b[2+n:]
	}
	s.Body = bytes.Clone(b)
	if !validMethod(s.Method) || s.Path == "" || s.Path[0] != '/' || len(s.Path) > maxPath || len(s.ContentType) > maxContentType {
		return Submission{}, bad
	}
	return s, nil
}

// validMethod reports whether m is an HTTP token of 1 to 32 bytes.
func validMethod(m string) bool {
	if m == "" || len(m) > maxMethod {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}

// Restore returns a copy of r (the solution post) that carries the held
// submission instead: its method, path and query, Content-Type and body,
// with the other headers of r. The caller forwards it.
func Restore(r *http.Request, s Submission) (*http.Request, error) {
	// As a request line: "//x" stays a path and never names a host.
	u, err := url.ParseRequestURI(s.Path)
	if err != nil || s.Path[0] != '/' || u.Host != "" || u.Scheme != "" {
		return nil, errors.New("challenge: the held path does not parse")
	}
	out := r.Clone(r.Context())
	out.Method = s.Method
	out.URL = u
	out.RequestURI = ""
	out.Header = r.Header.Clone()
	out.Header.Del("Content-Type")
	if s.ContentType != "" {
		out.Header.Set("Content-Type", s.ContentType)
	}
	out.Header.Set("Content-Length", strconv.Itoa(len(s.Body)))
	out.ContentLength = int64(len(s.Body))
	out.Body = io.NopCloser(bytes.NewReader(s.Body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(s.Body)), nil }
	out.TransferEncoding = nil
	return out, nil
}
