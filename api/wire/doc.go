// Package wire holds the JSON shapes of tollgate's HTTP API that the server
// and its Go client share: request bodies, the verdict and the problem
// details. It imports nothing but the standard library, so a caller's binary
// that uses the client pulls in neither the engine, Redis nor YAML.
// openapi.yaml is the contract; tests hold these types to it.
package wire
