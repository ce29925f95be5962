#!/usr/bin/env bash
# Checks the monitoring shipped in deploy/monitoring/ (scripts/deploy-check.sh runs it in CI):
# - `promtool check rules` on the alerting rules (alerts.yaml; the PrometheusRule of the
#   monitoring overlay holds the same groups, which the api test below checks);
# - `promtool test rules` on their unit tests (alerts.test.yaml: every alert fires in one case and
#   stays quiet in another);
# - the monitoring test of the api (api/tests/monitoring.rs): the PrometheusRule equal to
#   alerts.yaml, a test case of each kind and a runbook section in docs/operations.md for every
#   alert, and every query of the rules and of the Grafana dashboard parsed by promtool and naming
#   only metric families a real `shardgate serve` exports.
# promtool comes from Debian's `prometheus` package (scripts/promtool.sh installs it), kubectl
# from scripts/kubectl.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/promtool.sh
scripts/kubectl.sh

promtool check rules deploy/monitoring/alerts.yaml
(cd deploy/monitoring && promtool test rules alerts.test.yaml)
cargo nextest run -p shardgate-api --test monitoring
echo "deploy/monitoring: rules checked, every alert's tests pass, every query parses and names exported metrics"
