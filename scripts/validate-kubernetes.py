#!/usr/bin/env python3
"""Validates rendered Kubernetes manifests offline (scripts/deploy-check.sh runs it in a venv with
kubernetes-validate, which bundles the Kubernetes JSON schemas).

    validate-kubernetes.py <kubernetes version> <schemas dir> <rendered.yaml>...

Built-in kinds are checked strictly (an unknown field fails) against the bundled schemas of the
given Kubernetes version. Custom resources (ServiceMonitor) have no bundled schema: each must have
one in <schemas dir> named <group>_<version>_<Kind>.json, else it fails. Then checks across the
objects of one rendering (one `kubectl kustomize` output):

- every Deployment's probes name a port its container declares;
- the metric each HorizontalPodAutoscaler reads is one a Prometheus Adapter rule serves (across
  all the files given);
- namespaces: every namespaced object names a namespace, and that Namespace is rendered too, or
  the object is annotated `shardgate.io/namespace-created-by: <who>` (the monitoring rule goes
  into the namespace the Prometheus installation owns);
- references: every Secret and ConfigMap a pod template, an Ingress or a ServiceMonitor names is
  rendered in the same namespace, or (Secrets only) listed in that Namespace's annotation
  `shardgate.io/operator-secrets` (comma-separated names the operator creates); every volume a
  container mounts is defined, every volume defined is mounted, and every file the configuration
  names (SHARDGATE_*_FILE variables, `sslrootcert=` and the like in database URLs) lies under
  one of the container's mounts;
- issuers: every issuer in SHARDGATE_AUTH__ISSUERS (of the ConfigMaps and Secrets rendered, and
  of `env`) has an `audience`, or says `allow_any_audience = true`;
- topology spread: each constraint of a Deployment selects its own pods and no other
  Deployment's, names `pod-template-hash` in `matchLabelKeys`, and the hostname spread is
  `ScheduleAnyway`;
- the public front: a rendering with a gatekeeper has an Ingress; every Ingress has TLS from a
  Secret for each of its hosts, routes to Services that exist, and never to an admin Service;
- the admin plane: every `serve` and `gatekeeper` container sets SHARDGATE_ADMIN__LISTEN on a
  port it declares as `admin`, and a Service (labelled `shardgate.io/plane: admin`, port
  `admin`) selects the `serve` pods;
- migrations: no `serve` container migrates on start (SHARDGATE_STORAGE__MIGRATE_ON_START must be
  `false`; its default is true), and a Job runs `shardgate migrate`; what that Job needs from the
  rendering (its Namespace, ConfigMaps and Secrets) carries its label `shardgate.io/migration`,
  so that `kubectl apply -k <overlay> -l shardgate.io/migration=true` applies it whole, first.

Exits 1 when any file has a problem, naming every problem.
"""

import base64
import json
import os
import re
import sys
import tomllib

import jsonschema
import kubernetes_validate
import yaml

CLUSTER_SCOPED = {
    "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "PersistentVolume",
    "StorageClass", "PriorityClass", "IngressClass", "APIService", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
}
OPERATOR_SECRETS = "shardgate.io/operator-secrets"
NAMESPACE_CREATED_BY = "shardgate.io/namespace-created-by"
ADMIN_PLANE = "shardgate.io/plane"
MIGRATION = "shardgate.io/migration"
WORKLOADS = {"Deployment", "Job", "StatefulSet", "DaemonSet"}
# Configuration variables that name a file (the file must be mounted).
FILE_VARIABLE = re.compile(r"^SHARDGATE_[A-Z0-9_]*_FILE$")
# Files named in a database URL's query.
URL_FILE = re.compile(r"[?&](?:sslrootcert|sslcert|sslkey)=([^&\"'\s}]+)")


def name_of(obj):
    return f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}"


def schema_problems(obj, version, schemas):
    kind, api = obj.get("kind"), obj.get("apiVersion", "")
    name = name_of(obj)
    group, _, api_version = api.rpartition("/")
    schema_file = os.path.join(schemas, f"{group}_{api_version}_{kind}.json")
    problems = []
    if group and "." in group and not group.endswith(".k8s.io"):
        if not os.path.exists(schema_file):
            return [f"{name}: no schema for {api} {kind} (add {schema_file})"]
        with open(schema_file) as f:
            validator = jsonschema.Draft202012Validator(json.load(f))
        for error in validator.iter_errors(obj):
            path = ".".join(str(p) for p in error.absolute_path) or "(top)"
            problems.append(f"{name}: {path}: {error.message}")
    else:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as e:
            path = ".".join(str(p) for p in e.path) or "(top)"
            problems.append(f"{name}: {path}: {e.message}")
        except kubernetes_validate.SchemaNotFoundError:
            problems.append(f"{name}: Kubernetes {version} has no {api} {kind}")
    return problems


class Rendering:
    """The objects of one rendering, indexed for the checks across them."""

    def __init__(self, objects):
        self.objects = objects
        self.namespaces = {o["metadata"]["name"]: o for o in objects if o.get("kind") == "Namespace"}
        self.by_kind = {}
        for o in objects:
            self.by_kind.setdefault(o.get("kind"), []).append(o)

    def of(self, kind):
        return self.by_kind.get(kind, [])

    def find(self, kind, namespace, name):
        return next(
            (o for o in self.of(kind) if o["metadata"].get("name") == name and o["metadata"].get("namespace") == namespace),
            None,
        )

    def operator_secrets(self, namespace):
        annotation = self.namespaces.get(namespace, {}).get("metadata", {}).get("annotations", {}).get(OPERATOR_SECRETS, "")
        return {s.strip() for s in annotation.split(",") if s.strip()}

    def data_of(self, kind, namespace, name):
        """A rendered ConfigMap's or Secret's values as text; None when it is not rendered."""
        obj = self.find(kind, namespace, name)
        if obj is None:
            return None
        values = dict(obj.get("stringData", {}))
        for key, value in obj.get("data", {}).items():
            if kind == "Secret":
                value = base64.b64decode("".join(str(value).split())).decode("utf-8", "replace")
            values[key] = str(value)
        return values

    def env_of(self, namespace, container):
        """The container's variables, as far as the rendering knows them (an operator's Secret is
        not rendered)."""
        env = {}
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                env.update(self.data_of("ConfigMap", namespace, source["configMapRef"]["name"]) or {})
            elif "secretRef" in source:
                env.update(self.data_of("Secret", namespace, source["secretRef"]["name"]) or {})
        for variable in container.get("env", []):
            if "value" in variable:
                env[variable["name"]] = str(variable["value"])
        return env


def pod_spec(obj):
    return obj["spec"]["template"]["spec"]


def containers_of(spec):
    return spec.get("initContainers", []) + spec.get("containers", [])


def selects(match_labels, labels):
    return bool(match_labels) and all(labels.get(k) == v for k, v in match_labels.items())


def command_of(container):
    """`serve`, `gatekeeper`, `migrate`, ...: the shardgate subcommand a container runs."""
    args = container.get("args") or container.get("command") or []
    return args[0] if args else None


def check_namespaces(r):
    problems = []
    for obj in r.objects:
        if obj.get("kind") in CLUSTER_SCOPED:
            continue
        metadata = obj.get("metadata", {})
        namespace = metadata.get("namespace")
        if namespace is None:
            problems.append(f"{name_of(obj)}: names no namespace (set `namespace:` in the kustomization)")
        elif namespace not in r.namespaces and not metadata.get("annotations", {}).get(NAMESPACE_CREATED_BY):
            problems.append(
                f"{name_of(obj)}: its namespace {namespace} is not rendered (add a Namespace, or annotate the object "
                f"{NAMESPACE_CREATED_BY}: <who creates it>)"
            )
    return problems


def check_reference(r, referrer, kind, namespace, name, optional=False):
    if optional or r.find(kind, namespace, name) is not None:
        return []
    if kind == "Secret" and name in r.operator_secrets(namespace):
        return []
    hint = f" or listed in the Namespace's {OPERATOR_SECRETS}" if kind == "Secret" else ""
    return [f"{referrer}: names the {kind} {name}, which is neither rendered in {namespace}{hint}"]


def files_named(env):
    """(variable, path) for every file the configuration names."""
    for key, value in env.items():
        if FILE_VARIABLE.match(key) and value:
            yield key, value
        for path in URL_FILE.findall(value):
            yield key, path


def check_pod_templates(r):
    problems = []
    for obj in r.objects:
        if obj.get("kind") not in WORKLOADS:
            continue
        name, namespace, spec = name_of(obj), obj["metadata"].get("namespace"), pod_spec(obj)
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        mounted = set()
        for volume in volumes.values():
            if "secret" in volume:
                problems += check_reference(
                    r, f"{name}: volume {volume['name']}", "Secret", namespace, volume["secret"]["secretName"],
                    volume["secret"].get("optional", False),
                )
            if "configMap" in volume:
                problems += check_reference(
                    r, f"{name}: volume {volume['name']}", "ConfigMap", namespace, volume["configMap"]["name"],
                    volume["configMap"].get("optional", False),
                )
        for container in containers_of(spec):
            where = f"{name}: container {container['name']}"
            for source in container.get("envFrom", []):
                for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                    if key in source:
                        problems += check_reference(
                            r, where, kind, namespace, source[key]["name"], source[key].get("optional", False)
                        )
            for variable in container.get("env", []):
                for key, kind in (("secretKeyRef", "Secret"), ("configMapKeyRef", "ConfigMap")):
                    ref = variable.get("valueFrom", {}).get(key)
                    if ref:
                        problems += check_reference(r, where, kind, namespace, ref["name"], ref.get("optional", False))
            mounts = container.get("volumeMounts", [])
            for mount in mounts:
                mounted.add(mount["name"])
                if mount["name"] not in volumes:
                    problems.append(f"{where}: mounts the volume {mount['name']}, which the pod does not define")
            for variable, path in files_named(r.env_of(namespace, container)):
                if not any(path.startswith(m["mountPath"].rstrip("/") + "/") for m in mounts):
                    problems.append(f"{where}: {variable} names {path}, which is under none of its mounts")
        for unused in sorted(set(volumes) - mounted):
            problems.append(f"{name}: the volume {unused} is mounted by no container")
    for ingress in r.of("Ingress"):
        for tls in ingress["spec"].get("tls", []):
            if "secretName" in tls:
                problems += check_reference(
                    r, name_of(ingress), "Secret", ingress["metadata"].get("namespace"), tls["secretName"]
                )
    for monitor in r.of("ServiceMonitor"):
        for endpoint in monitor["spec"].get("endpoints", []):
            secret = endpoint.get("tlsConfig", {}).get("ca", {}).get("secret")
            if secret:
                problems += check_reference(
                    r, name_of(monitor), "Secret", monitor["metadata"].get("namespace"), secret["name"],
                    secret.get("optional", False),
                )
    return problems


def issuers_in(value):
    """The issuers of a SHARDGATE_AUTH__ISSUERS value (an inline TOML array of tables)."""
    return tomllib.loads(f"issuers = {value}")["issuers"]


def check_issuers(r):
    problems = []
    sources = []
    for obj in r.of("ConfigMap") + r.of("Secret"):
        values = r.data_of(obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"])
        sources += [(name_of(obj), v) for k, v in values.items() if k == "SHARDGATE_AUTH__ISSUERS"]
    for obj in r.objects:
        if obj.get("kind") in WORKLOADS:
            for container in containers_of(pod_spec(obj)):
                sources += [
                    (f"{name_of(obj)}: container {container['name']}", str(v["value"]))
                    for v in container.get("env", [])
                    if v["name"] == "SHARDGATE_AUTH__ISSUERS" and "value" in v
                ]
    for where, value in sources:
        try:
            issuers = issuers_in(value)
        except tomllib.TOMLDecodeError as e:
            problems.append(f"{where}: SHARDGATE_AUTH__ISSUERS is not a TOML list of issuers ({e})")
            continue
        for issuer in issuers:
            if not issuer.get("audience") and issuer.get("allow_any_audience") is not True:
                problems.append(
                    f"{where}: the issuer {issuer.get('issuer')!r} has no `audience` (nor `allow_any_audience = true`)"
                )
    return problems


def check_topology_spread(r):
    problems = []
    deployments = r.of("Deployment")
    for deployment in deployments:
        name, namespace = name_of(deployment), deployment["metadata"].get("namespace")
        own = deployment["spec"]["template"]["metadata"].get("labels", {})
        for constraint in pod_spec(deployment).get("topologySpreadConstraints", []):
            where = f"{name}: the spread over {constraint.get('topologyKey')}"
            selector = constraint.get("labelSelector", {})
            if selector.get("matchExpressions"):
                problems.append(f"{where}: uses matchExpressions, which this check cannot follow (use matchLabels)")
            match = selector.get("matchLabels", {})
            if not selects(match, own):
                problems.append(f"{where}: does not select the Deployment's own pods")
            for other in deployments:
                if other is not deployment and other["metadata"].get("namespace") == namespace:
                    if selects(match, other["spec"]["template"]["metadata"].get("labels", {})):
                        problems.append(f"{where}: also selects the pods of {name_of(other)}")
            if "pod-template-hash" not in constraint.get("matchLabelKeys", []):
                problems.append(f"{where}: matchLabelKeys lacks pod-template-hash (a rollout's old pods would count)")
            if constraint.get("topologyKey") == "kubernetes.io/hostname" and constraint.get("whenUnsatisfiable") != "ScheduleAnyway":
                problems.append(f"{where}: must be ScheduleAnyway (the autoscaler may ask for more pods than nodes)")
    return problems


def service_port_names(service):
    return {p.get("name") for p in service["spec"].get("ports", [])}


def is_admin_service(service):
    return service["metadata"].get("labels", {}).get(ADMIN_PLANE) == "admin" or "admin" in service_port_names(service)


def check_front_and_admin_plane(r):
    problems = []
    workloads = [
        (d, c) for d in r.of("Deployment") for c in pod_spec(d).get("containers", []) if command_of(c) in ("serve", "gatekeeper")
    ]
    services = r.of("Service")
    if any(command_of(c) == "gatekeeper" for _, c in workloads) and not r.of("Ingress"):
        problems.append("the gatekeeper (the public front) has no Ingress")
    for ingress in r.of("Ingress"):
        name, namespace = name_of(ingress), ingress["metadata"].get("namespace")
        tls = ingress["spec"].get("tls", [])
        covered = {h for t in tls if t.get("secretName") for h in t.get("hosts", [])}
        if not tls:
            problems.append(f"{name}: no TLS (spec.tls with a secretName)")
        for rule in ingress["spec"].get("rules", []):
            if rule.get("host") not in covered:
                problems.append(f"{name}: the host {rule.get('host')} has no TLS certificate")
            for path in rule.get("http", {}).get("paths", []):
                target = path["backend"].get("service", {}).get("name")
                service = r.find("Service", namespace, target)
                if service is None:
                    problems.append(f"{name}: routes to the Service {target}, which is not rendered")
                elif is_admin_service(service):
                    problems.append(f"{name}: routes to the admin Service {target}")
    for deployment, container in workloads:
        where = f"{name_of(deployment)}: container {container['name']}"
        env = r.env_of(deployment["metadata"].get("namespace"), container)
        listen = env.get("SHARDGATE_ADMIN__LISTEN")
        ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
        if not listen:
            problems.append(f"{where}: no admin listener (SHARDGATE_ADMIN__LISTEN): the admin plane would be public")
        elif ports.get("admin") is None or not listen.endswith(f":{ports['admin']}"):
            problems.append(f"{where}: SHARDGATE_ADMIN__LISTEN={listen} is not on the container's port `admin`")
        if command_of(container) == "serve":
            labels = deployment["spec"]["template"]["metadata"].get("labels", {})
            admin = [
                s for s in services
                if s["metadata"].get("namespace") == deployment["metadata"].get("namespace")
                and selects(s["spec"].get("selector", {}), labels)
                and s["metadata"].get("labels", {}).get(ADMIN_PLANE) == "admin"
                and any(p.get("name") == "admin" and p.get("targetPort") == "admin" for p in s["spec"].get("ports", []))
            ]
            if not admin:
                problems.append(f"{where}: no admin Service (labelled {ADMIN_PLANE}: admin, port `admin`) selects its pods")
            if env.get("SHARDGATE_STORAGE__MIGRATE_ON_START", "true").lower() != "false":
                problems.append(f"{where}: migrates on start; set SHARDGATE_STORAGE__MIGRATE_ON_START=false (a Job migrates)")
            migrate_jobs = [
                j for j in r.of("Job")
                if any(command_of(c) == "migrate" for c in pod_spec(j).get("containers", []))
            ]
            if not migrate_jobs:
                problems.append(f"{where}: no Job runs `shardgate migrate`")
    for monitor in r.of("ServiceMonitor"):
        selector = monitor["spec"].get("selector", {}).get("matchLabels", {})
        scraped = [s for s in services if selects(selector, s["metadata"].get("labels", {}))]
        for endpoint in monitor["spec"].get("endpoints", []):
            if not any(endpoint.get("port") in service_port_names(s) for s in scraped):
                problems.append(f"{name_of(monitor)}: no Service it selects has the port {endpoint.get('port')}")
    return problems


def check_migration_job(r):
    """The migration Job is applied alone with `-l shardgate.io/migration=true`: whatever of its
    needs is rendered must carry the label too."""
    problems = []
    for job in r.of("Job"):
        if not any(command_of(c) == "migrate" for c in pod_spec(job).get("containers", [])):
            continue
        label = job["metadata"].get("labels", {}).get(MIGRATION)
        if label is None:
            problems.append(f"{name_of(job)}: no label {MIGRATION} (docs/deploy.md applies it alone with it)")
            continue
        namespace = job["metadata"].get("namespace")
        needs = [r.namespaces.get(namespace)]
        spec = pod_spec(job)
        for container in containers_of(spec):
            for source in container.get("envFrom", []):
                for key, kind in (("configMapRef", "ConfigMap"), ("secretRef", "Secret")):
                    if key in source:
                        needs.append(r.find(kind, namespace, source[key]["name"]))
        for volume in spec.get("volumes", []):
            if "secret" in volume:
                needs.append(r.find("Secret", namespace, volume["secret"]["secretName"]))
            if "configMap" in volume:
                needs.append(r.find("ConfigMap", namespace, volume["configMap"]["name"]))
        for need in needs:
            if need is not None and need["metadata"].get("labels", {}).get(MIGRATION) != label:
                problems.append(f"{name_of(job)}: needs {name_of(need)}, which lacks the label {MIGRATION}: {label}")
    return problems


def problems_of(objects, version, schemas):
    problems = []
    hpa_metrics, adapter_metrics = [], set()
    for obj in objects:
        problems += schema_problems(obj, version, schemas)
        kind, name = obj.get("kind"), name_of(obj)
        if kind == "Deployment":
            for container in pod_spec(obj).get("containers", []):
                ports = {p.get("name") for p in container.get("ports", [])}
                ports |= {p.get("containerPort") for p in container.get("ports", [])}
                for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
                    port = container.get(probe, {}).get("httpGet", {}).get("port")
                    if port is not None and port not in ports:
                        problems.append(f"{name}: {probe} uses port {port!r}, which the container does not declare")
        if kind == "HorizontalPodAutoscaler":
            for metric in obj["spec"].get("metrics", []):
                if metric.get("type") == "Pods":
                    hpa_metrics.append((name, metric["pods"]["metric"]["name"]))
        if kind == "ConfigMap" and "config.yaml" in obj.get("data", {}):
            for rule in (yaml.safe_load(obj["data"]["config.yaml"]) or {}).get("rules", []):
                adapter_metrics.add(rule.get("name", {}).get("as"))
    if problems:
        # The checks across objects read fields the schemas guarantee.
        return problems, hpa_metrics, adapter_metrics
    rendering = Rendering(objects)
    for check in (check_namespaces, check_pod_templates, check_issuers, check_topology_spread, check_front_and_admin_plane,
                  check_migration_job):
        problems += check(rendering)
    return problems, hpa_metrics, adapter_metrics


def main():
    version, schemas, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    hpa_metrics, adapter_metrics, failed = [], set(), False
    for path in files:
        with open(path) as f:
            objects = [o for o in yaml.safe_load_all(f) if o]
        problems, hpas, served = problems_of(objects, version, schemas)
        hpa_metrics += hpas
        adapter_metrics |= served
        for problem in problems:
            print(f"{path}: {problem}", file=sys.stderr)
        failed |= bool(problems)
        if not problems:
            print(f"{path}: {len(objects)} objects valid")
    for name, metric in hpa_metrics:
        if metric not in adapter_metrics:
            print(f"{name}: reads the metric {metric}, which no Prometheus Adapter rule serves", file=sys.stderr)
            failed = True
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
