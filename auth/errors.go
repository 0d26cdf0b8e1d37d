package auth

import (
	"errors"
	"fmt"
)

// ConfigError is a Config that New refuses, or a JWK Set New could not
// fetch or parse. Field is the Config field at fault, a path for a nested
// one: "Audience", "Keys", "Keys[0]", "Tenants[1]", "MaxLifetime",
// "Leeway", "JWKSURL", "JWKSRefresh", "JWKSTenants". Detail says what is
// wrong and names the setting as a person reads it (`keys[0] (kid "k"):
// the HS256 secret has 12 bytes; ...`, "an audience is required"), without
// the package's prefix: whoever shows the error under a name of its own
// (config, at the file's auth key) takes Detail, never cuts Error's
// words. Err is the cause beneath, if any.
type ConfigError struct {
	Field  string
	Detail string
	Err    error
}

// Error returns "auth: " followed by Detail.
func (e *ConfigError) Error() string { return "auth: " + e.Detail }

func (e *ConfigError) Unwrap() error { return e.Err }

// configError is a *ConfigError of field whose Detail is format's message;
// a %w in format is its Err.
func configError(field, format string, args ...any) *ConfigError {
	err := fmt.Errorf(format, args...)
	return &ConfigError{Field: field, Detail: err.Error(), Err: errors.Unwrap(err)}
}

// jwksError is a JWK Set that does not fetch or parse: Error is "auth:
// JWKS: " followed by detail.
type jwksError struct {
	detail string
	err    error
}

func (e *jwksError) Error() string { return "auth: JWKS: " + e.detail }
func (e *jwksError) Unwrap() error { return e.err }

// errJWKS is a *jwksError whose detail is format's message; a %w in
// format is its cause.
func errJWKS(format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &jwksError{detail: err.Error(), err: errors.Unwrap(err)}
}

// jwksConfigError is New's *ConfigError for a JWK Set at JWKSURL that it
// could not fetch or parse.
func jwksConfigError(err error) *ConfigError {
	detail := err.Error()
	var je *jwksError
	if errors.As(err, &je) {
		detail = "JWKS: " + je.detail
	}
	return &ConfigError{Field: "JWKSURL", Detail: detail, Err: err}
}
