#!/usr/bin/env bash
# Makes sure `kubectl` with kustomize v5 is installed: scripts/deploy-check.sh renders the
# manifests under deploy/kubernetes/ with `kubectl kustomize`, and api/tests/kubernetes.rs starts
# the binary with the rendered settings. Installs Debian's kubernetes-client when kubectl is
# missing. Safe to run repeatedly.
set -euo pipefail

if ! command -v kubectl >/dev/null; then
    echo "installing kubernetes-client (Debian package) for kubectl"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kubernetes-client >/dev/null
fi
# The manifests use kustomize v5 fields (labels, patches with targets, envs); the kubectl of
# Debian 12's kubernetes-client (1.20) embeds kustomize v2, which cannot render them.
if ! kubectl version --client 2>/dev/null | grep -q '^Kustomize Version: v5'; then
    kubectl version --client >&2 || true
    echo "kubectl embeds no kustomize v5 (kubectl 1.27 or later does): install a newer kubectl" >&2
    exit 1
fi
