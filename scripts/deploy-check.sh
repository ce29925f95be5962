#!/usr/bin/env bash
# Checks the deployment files offline:
# - the systemd unit with `systemd-analyze verify` (Debian's systemd package, installed if
#   missing) against the binary this checkout builds, and its exposure with
#   `systemd-analyze security`;
# - the Kubernetes manifests: every kustomization under deploy/kubernetes/ (each overlay, and
#   the monitoring rules) rendered with `kubectl kustomize` (scripts/kubectl.sh) and every object
#   validated strictly against the Kubernetes JSON schemas bundled by kubernetes-validate (PyPI,
#   pinned, installed into a venv in the user's cache) or, for custom resources, against
#   deploy/kubernetes/schemas/, and the checks across objects (Namespace, Secrets and mounts,
#   issuers' audiences, topology spread, Ingress with TLS, admin Service, migration Job); then
#   the same validation on deliberately broken copies, one per rule, each of which must fail (so
#   every check is known to bite);
# - /metrics: the gateway started on the embedded default, a tenant and a record created, the
#   scrape in the Prometheus text format checked by `promtool check metrics` (Debian's
#   prometheus package, installed if missing).
set -euo pipefail
cd "$(dirname "$0")/.."

KUBERNETES_VERSION=1.32
KUBERNETES_VALIDATE=1.32.0

if ! command -v systemd-analyze >/dev/null; then
    echo "installing systemd (Debian package) for systemd-analyze"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq systemd >/dev/null
fi
# The binary (`$shardgate`), a work directory removed on exit, and `start_embedded_server`.
source scripts/embedded-server.sh

# --- systemd ---------------------------------------------------------------------------------
# The unit names the installed binary; verify checks that it exists, so point it at this build.
sed "s|/usr/local/bin/shardgate|$shardgate|" deploy/systemd/shardgate.service >"$work/shardgate.service"
# verify exits 0 on settings it ignores (a misspelt value is only a warning): any output fails.
if ! out="$(systemd-analyze verify "$work/shardgate.service" 2>&1)" || [ -n "$out" ]; then
    echo "$out" >&2
    echo "deploy/systemd/shardgate.service: systemd-analyze verify complained" >&2
    exit 1
fi
systemd-analyze security --offline=yes --threshold=20 "$work/shardgate.service" | tail -n 1
echo "deploy/systemd/shardgate.service: verified"

# --- Kubernetes ------------------------------------------------------------------------------
scripts/kubectl.sh
venv="${XDG_CACHE_HOME:-$HOME/.cache}/shardgate/kubernetes-validate-$KUBERNETES_VALIDATE"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import kubernetes_validate' 2>/dev/null; then
    echo "installing kubernetes-validate $KUBERNETES_VALIDATE (PyPI) into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "kubernetes-validate==$KUBERNETES_VALIDATE"
fi
validate() { "$venv/bin/python" scripts/validate-kubernetes.py "$KUBERNETES_VERSION" deploy/kubernetes/schemas "$@"; }
rendered=()
for kustomization in deploy/kubernetes/overlays/*/kustomization.yaml deploy/kubernetes/monitoring/kustomization.yaml; do
    dir="$(dirname "$kustomization")"
    out="$work/$(echo "$dir" | tr / _).yaml"
    kubectl kustomize "$dir" >"$out"
    rendered+=("$out")
done
validate "${rendered[@]}"
# The check must bite. A breakage is a sed expression applied to every rendered file, or
# `py:` and a Python statement run on each file's `objects` (its documents, in order), with
# `spec(o)` a workload's pod spec and `containers(o)` its containers. Each breaks one rule; the
# validation of the broken copies must fail.
breakages=(
    # a misspelt field in a built-in object and in a custom resource
    's/readOnlyRootFilesystem:/readOnlyRootFileSystem:/'
    's/scrapeTimeout:/scrapeTimout:/'
    # an autoscaler reading a metric nothing serves
    's/name: shardgate_http_requests_in_flight/name: shardgate_http_requests_inflight/'
    # the Namespace removed
    'py:objects[:] = [o for o in objects if o["kind"] != "Namespace"]'
    # the CA mounts removed (the volumes stay, the configured CA files are under no mount)
    'py:[c.__setitem__("volumeMounts", [m for m in c.get("volumeMounts", []) if not m["name"].endswith("-ca")]) for o in objects if o["kind"] in ("Deployment", "Job") for c in containers(o)]'
    # a Secret neither rendered nor listed as the operator's (the listeners' certificate)
    'py:objects[:] = [o for o in objects if not (o["kind"] == "Secret" and o["metadata"]["name"] == "shardgate-tls")]; [o["metadata"]["annotations"].__setitem__("shardgate.io/operator-secrets", o["metadata"]["annotations"]["shardgate.io/operator-secrets"].replace("shardgate-tls,", "")) for o in objects if o["kind"] == "Namespace" and "shardgate.io/operator-secrets" in o["metadata"].get("annotations", {})]'
    # the issuers' audiences removed (production's are in a ConfigMap; dev's in Secrets)
    's/audience=\[[^]]*\],//'
    'py:[o["data"].__setitem__(k, base64.b64encode(re.sub(r"audience=\[[^]]*\],", "", base64.b64decode(v).decode()).encode()).decode()) for o in objects if o["kind"] == "Secret" for k, v in o.get("data", {}).items()]'
    # the topology spread selecting every shardgate pod (both Deployments)
    'py:[t["labelSelector"]["matchLabels"].pop("app.kubernetes.io/component") for o in objects if o["kind"] == "Deployment" for t in spec(o).get("topologySpreadConstraints", [])]'
    # the hostname spread back to DoNotSchedule
    'py:[t.__setitem__("whenUnsatisfiable", "DoNotSchedule") for o in objects if o["kind"] == "Deployment" for t in spec(o).get("topologySpreadConstraints", []) if t["topologyKey"] == "kubernetes.io/hostname"]'
    # the Ingress's TLS removed
    'py:[o["spec"].pop("tls") for o in objects if o["kind"] == "Ingress"]'
    # the admin Service removed
    'py:objects[:] = [o for o in objects if not (o["kind"] == "Service" and o["metadata"]["name"] == "shardgate-admin")]'
    # migrations on start again
    's/SHARDGATE_STORAGE__MIGRATE_ON_START: "false"/SHARDGATE_STORAGE__MIGRATE_ON_START: "true"/'
    # the migration Job's ConfigMap left out of its first, label-selected apply
    'py:[o["metadata"]["labels"].pop("shardgate.io/migration") for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("shardgate-backend-config")]'
)
break_copy() {
    "$venv/bin/python" -c '
import base64, re, sys, yaml
statement, source, target = sys.argv[1:]
with open(source) as f:
    objects = [o for o in yaml.safe_load_all(f) if o]
spec = lambda o: o["spec"]["template"]["spec"]
containers = lambda o: spec(o).get("initContainers", []) + spec(o)["containers"]
exec(statement)
with open(target, "w") as f:
    yaml.safe_dump_all(objects, f)
' "$@"
}
for breakage in "${breakages[@]}"; do
    broken=()
    for file in "${rendered[@]}"; do
        if [[ "$breakage" == py:* ]]; then
            break_copy "${breakage#py:}" "$file" "$file.broken"
        else
            sed "$breakage" "$file" >"$file.broken"
        fi
        broken+=("$file.broken")
    done
    if validate "${broken[@]}" >/dev/null 2>&1; then
        echo "deploy/kubernetes: the validation passed a broken copy ($breakage)" >&2
        exit 1
    fi
done
echo "deploy/kubernetes: every overlay renders and validates; ${#breakages[@]} broken copies are refused"

# --- alerting rules, their tests and the dashboard (deploy/monitoring/) -----------------------
scripts/monitoring-check.sh

# --- /metrics --------------------------------------------------------------------------------
if ! command -v promtool >/dev/null; then
    echo "installing prometheus (Debian package) for promtool"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null
fi
start_embedded_server
admin="$("$shardgate" token --admin --data-dir "$work/data")"
call() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
expect() { [ "$1" = "$2" ] || { echo "expected $2, got $1 ($3)" >&2; exit 1; }; }
expect "$(call -X POST "$base/v1/admin/tenants" -H "Authorization: Bearer $admin" \
    -H 'Content-Type: application/json' -d '{"id": "metrics-check"}')" 201 "create a tenant"
# Signed once the tenant exists: a token dated before its tenant's creation is refused (401
# token_predates_tenant), which a slow machine sees when the two fall in different seconds.
token="$("$shardgate" token --tenant metrics-check --scopes read,write --data-dir "$work/data")"
expect "$(call -X PUT "$base/v1/tenants/metrics-check/collections/orders/records/o-1" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{"total": 1}')" 201 "put a record"
expect "$(call "$base/v1/tenants/metrics-check/collections/orders/records/o-1" -H "Authorization: Bearer $token")" 200 "get it"
expect "$(call "$base/v1/tenants/metrics-check/collections/orders/records/none" -H "Authorization: Bearer $token")" 404 "a missing record"
expect "$(call "$base/v1/tenants/metrics-check/collections/orders/records/o-1")" 401 "no token"
headers="$work/metrics.headers"
curl -sf -D "$headers" -H 'Accept: text/plain' "$base/metrics" >"$work/metrics.txt"
grep -qi '^content-type: text/plain; version=0.0.4' "$headers" || { cat "$headers" >&2; echo "/metrics did not answer text/plain" >&2; exit 1; }
for series in 'shardgate_http_requests_total{method="PUT",route="/v1/tenants/{tenant}/collections/{collection}/records/{key}",status="201"}' \
    'shardgate_http_requests_in_flight '; do
    grep -qF "$series" "$work/metrics.txt" || { echo "/metrics lacks $series" >&2; exit 1; }
done
if ! promtool check metrics <"$work/metrics.txt"; then
    echo "/metrics (Prometheus text format): promtool check metrics complained" >&2
    exit 1
fi
curl -sf "$base/metrics" | promtool check metrics || { echo "/metrics without Accept is not the Prometheus text format promtool reads" >&2; exit 1; }
curl -sf -H 'Accept: application/openmetrics-text; version=1.0.0' "$base/metrics" | tail -n 1 | grep -qx '# EOF' || { echo "/metrics asked for OpenMetrics does not answer it" >&2; exit 1; }
echo "/metrics: $(grep -c '^# TYPE' "$work/metrics.txt") families, promtool check metrics clean"
