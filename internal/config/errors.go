package config

import (
	"errors"

	"github.com/tollgate-auth/tollgate/api/client"
	"github.com/tollgate-auth/tollgate/auth"
)

// newVerifier and newProxies are auth.New and client.NewProxies, which
// check the auth section and the proxy's addresses; a test puts errors
// worded otherwise in their place, to show that config reads their types.
var (
	newVerifier = auth.New
	newProxies  = client.NewProxies
)

// authError is an error of the file's auth section in the file's words,
// to be said after the section's name: auth's *ConfigError says its
// Detail (`keys[0] (kid "k"): ...`), taken as a value, never cut from its
// text; config's own reading of the section (a key file that does not
// read) says its message as it is.
func authError(err error) error {
	var ce *auth.ConfigError
	if errors.As(err, &ce) {
		return said(ce.Detail, err, false)
	}
	return said(err.Error(), err, false)
}

// proxiesDetail is api/client's refusal of the proxy's trusted_proxies
// and client_ip_header in the file's words: a *client.ProxyConfigError's
// Detail, taken as a value, never cut from its text.
func proxiesDetail(err error) string {
	var pe *client.ProxyConfigError
	if errors.As(err, &pe) {
		return pe.Detail
	}
	return err.Error()
}
