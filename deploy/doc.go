// Package deploy holds what operators load next to tollgate, and the tests
// that keep it true to the service: the Grafana dashboard
// (grafana/tollgate.json), the Prometheus alerting rules
// (prometheus/alerts.yaml) and their promtool unit tests
// (prometheus/alerts_test.yaml).
//
// go test ./deploy/ checks the rules and runs their unit tests with promtool
// (skipped when promtool is not installed, failed when CI=true;
// scripts/ensure-promtool.sh installs it), checks that every panel of the
// dashboard has a title, a description and a query that parses, and fails
// when the dashboard or the rules name a metric tollgate does not export.
package deploy
