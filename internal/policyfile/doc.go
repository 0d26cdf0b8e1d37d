// Package policyfile reads tollgate's policy format: the flows of a config
// or policy file, in YAML, laid over the built-in policy
// (default_policy.yaml, every number commented) and compiled into an
// authguard.Policy, every mistake an *Error naming its line and what is
// valid. It imports the engine's packages and the YAML library only, so
// that the tests of the engine and its stores, which load policies, link
// neither Redis, the proxy nor the HTTP stack the rest of a config file
// configures; cmd/tollgate's TestPolicyFile_ImportsTheEngineAndYAMLOnly
// holds it so. internal/config reads the rest of a config file with it and
// gives its callers the same functions under its own name.
package policyfile
