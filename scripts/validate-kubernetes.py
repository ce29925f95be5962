#!/usr/bin/env python3
"""Validates rendered Kubernetes manifests offline (scripts/deploy-check.sh runs it in a venv with
kubernetes-validate, which bundles the Kubernetes JSON schemas).

    validate-kubernetes.py <kubernetes version> <schemas dir> <rendered.yaml>...

Built-in kinds are checked strictly (an unknown field fails) against the bundled schemas of the
given Kubernetes version. Custom resources (ServiceMonitor) have no bundled schema: each must have
one in <schemas dir> named <group>_<version>_<Kind>.json, else it fails. Then two checks across
objects: every Deployment's probes name a port its container declares, and the metric each
HorizontalPodAutoscaler reads is one a Prometheus Adapter rule in the same files serves.
Exits 1 on the first file with a problem, naming every problem in it.
"""

import json
import os
import sys

import jsonschema
import kubernetes_validate
import yaml


def problems_of(objects, version, schemas):
    problems = []
    hpa_metrics, adapter_metrics = [], set()
    for obj in objects:
        kind, api = obj.get("kind"), obj.get("apiVersion", "")
        name = f"{kind}/{obj.get('metadata', {}).get('name')}"
        group, _, api_version = api.rpartition("/")
        schema_file = os.path.join(schemas, f"{group}_{api_version}_{kind}.json")
        if group and "." in group and not group.endswith(".k8s.io"):
            if not os.path.exists(schema_file):
                problems.append(f"{name}: no schema for {api} {kind} (add {schema_file})")
                continue
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
        if kind == "Deployment":
            for container in obj["spec"]["template"]["spec"].get("containers", []):
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
