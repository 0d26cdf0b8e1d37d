// Package kubernetes holds no code: its tests check the Kubernetes manifests
// in this directory (deploy/kubernetes). They decode every manifest into the
// typed Kubernetes and Prometheus Operator API structs with unknown fields
// refused, hold the manifests to what README.md here promises (the restricted
// securityContext, the probes, secrets only as files, selectors that match),
// build the kustomization with kubectl kustomize, and check the ConfigMap's
// tollgate configuration with tollgate's own validate-config.
//
//	cd deploy/kubernetes && go test ./...
//
// It is a module of its own so that the Kubernetes API packages stay out of
// the service's go.mod.
package kubernetes
