//! `kubectl kustomize` of the manifests in `deploy/kubernetes/`, for the tests in `api/tests/`
//! that read what an overlay renders.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// `kubectl kustomize <dir>`, as JSON values.
pub fn render(dir: &Path) -> Vec<Value> {
    let output = Command::new("kubectl").arg("kustomize").arg(dir).output().unwrap_or_else(|e| {
        panic!("kubectl is needed to render {} ({e}): scripts/kubectl.sh installs it", dir.display())
    });
    assert!(
        output.status.success(),
        "kubectl kustomize {}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_yaml::Deserializer::from_slice(&output.stdout)
        .map(|document| <Value as serde::Deserialize>::deserialize(document).unwrap())
        .filter(|object| !object.is_null())
        .collect()
}
