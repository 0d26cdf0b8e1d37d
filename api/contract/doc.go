// Package contract holds tollgate's HTTP API to openapi.yaml, in a module
// of its own so that the OpenAPI validator (kin-openapi) stays out of the
// service's go.mod.
//
// Check validates one exchange, a request and the response the API gave
// it, against openapi.yaml: the response must be one the document
// describes (or, for a request that matches no operation, one of its
// x-tollgate-fallback-responses), and the request's own validity is
// returned, for tests that want the document to reject what the server
// refuses. Serve answers Check over a line protocol; cmd/apicheck runs it.
// The api package's tests start cmd/apicheck and send it every exchange
// they make (api/harness_test.go), so each response of those tests is
// checked against the document as it is served.
//
// The tests of this module hold the rest of the contract: openapi.yaml is
// valid OpenAPI 3.1, its routes are the router's, and the wire types,
// constants and error responses match its schemas.
package contract
