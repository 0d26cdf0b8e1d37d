// Package tollgate holds what belongs to the whole service rather than to
// one of its packages: the OpenAPI document of its HTTP API.
package tollgate

import _ "embed"

// OpenAPI is openapi.yaml, the contract of the HTTP API (OpenAPI 3.1). The
// server serves it at GET /openapi.yaml and the api tests validate every
// response against it.
//
//go:embed openapi.yaml
var OpenAPI []byte
