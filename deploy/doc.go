// Package deploy holds what operators load next to tollgate, and the tests
// that keep it true to the service: the Grafana dashboard
// (grafana/tollgate.json), the Prometheus alerting rules
// (prometheus/alerts.yaml) and their promtool unit tests
// (prometheus/alerts_test.yaml); the hardened systemd unit
// (systemd/tollgate.service) and the Compose file of two instances on one
// Redis (compose.yaml, compose/). The Kubernetes manifests are a module of
// their own (kubernetes/), so that their schemas stay out of tollgate's
// go.mod.
//
// go test ./deploy/ checks the rules and runs their unit tests with promtool
// (skipped when promtool is not installed, failed when CI=true;
// scripts/ensure-promtool.sh installs it), checks that every panel of the
// dashboard has a title, a description and a query that parses, and fails
// when the dashboard or the rules name a metric tollgate does not export. It
// verifies the unit and holds its exposure score (systemd-analyze security
// --offline) at 2.0 or less, and holds compose.yaml to what docs/deploy.md says the
// bounds need: one secret and one Redis for both instances, Redis with
// noeviction, persistence and a password, no secret in a file or variable;
// it starts Redis and tollgate as the Compose file configures them.
package deploy
