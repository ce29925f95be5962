//! The Kubernetes manifests (deploy/kubernetes/) as the cluster would run them: each overlay
//! rendered with `kubectl kustomize`, its ConfigMaps' and Secrets' variables loaded by the
//! configuration the binary reads, and the dev overlay's backend and gatekeeper started as real
//! processes with those variables (only the database URLs, the listen port and the data
//! directory replaced by the test's), their probes answering on the paths the Deployments name.
//! Needs kubectl (scripts/kubectl.sh installs it) and PostgreSQL on 127.0.0.1:5432.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use serde_json::Value;
use shardgate_api::config::{Config, GatekeeperConfig};
use shared_catalog::Databases;
use support::Process;

#[expect(dead_code, reason = "the test issuer's tokens are not used: the manifests name their own issuer")]
mod shared_catalog;
#[expect(dead_code, reason = "these stories use part of the process harness")]
mod support;

fn kubernetes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

/// `kubectl kustomize <dir>`, as JSON values.
fn render(dir: &Path) -> Vec<Value> {
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

fn object<'a>(objects: &'a [Value], kind: &str, name_prefix: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"].as_str().is_some_and(|n| n.starts_with(name_prefix)))
        .unwrap_or_else(|| panic!("no {kind} {name_prefix}* in the rendering"))
}

/// One Deployment's container as the kubelet would run it: its arguments, its environment
/// (ConfigMap, then Secret, as `envFrom` lists them; a Secret absent from the rendering is
/// taken from `example_secrets`), its port and its probes.
struct Container {
    args: Vec<String>,
    env: BTreeMap<String, String>,
    port: u16,
    liveness: String,
    readiness: String,
}

fn container(objects: &[Value], deployment: &str, example_secrets: Option<&Path>) -> Container {
    let spec = &object(objects, "Deployment", deployment)["spec"]["template"]["spec"]["containers"][0];
    let args = spec["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect();
    let mut env = BTreeMap::new();
    for source in spec["envFrom"].as_array().unwrap() {
        if let Some(name) = source["configMapRef"]["name"].as_str() {
            let data = object(objects, "ConfigMap", name)["data"].as_object().unwrap();
            env.extend(data.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned())));
        } else if let Some(name) = source["secretRef"]["name"].as_str() {
            let rendered = objects.iter().find(|o| o["kind"] == "Secret" && o["metadata"]["name"] == name);
            match (rendered, example_secrets) {
                (Some(secret), _) => {
                    let data = secret["data"].as_object().unwrap();
                    env.extend(data.iter().map(|(k, v)| {
                        // kubectl breaks long values over lines.
                        let encoded: String = v.as_str().unwrap().split_whitespace().collect();
                        let value = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
                        (k.clone(), String::from_utf8(value).unwrap())
                    }));
                }
                (None, Some(example)) => {
                    let text = std::fs::read_to_string(example).unwrap();
                    env.extend(text.lines().filter_map(|l| l.split_once('=')).map(|(k, v)| (k.into(), v.into())));
                }
                (None, None) => panic!("{deployment}: Secret {name} is neither rendered nor given"),
            }
        }
    }
    let port_named = |name: &Value| {
        let ports = spec["ports"].as_array().unwrap();
        let port = ports.iter().find(|p| &p["name"] == name).unwrap_or_else(|| panic!("no port {name}"));
        u16::try_from(port["containerPort"].as_u64().unwrap()).unwrap()
    };
    let port = port_named(&spec["livenessProbe"]["httpGet"]["port"]);
    assert_eq!(port, port_named(&spec["readinessProbe"]["httpGet"]["port"]), "{deployment}: probes on one port");
    let listen = env.get("SHARDGATE_LISTEN").unwrap_or_else(|| panic!("{deployment}: no SHARDGATE_LISTEN"));
    assert_eq!(listen, &format!("0.0.0.0:{port}"), "{deployment}: listens where its probes and Service look");
    let path = |probe: &str| spec[probe]["httpGet"]["path"].as_str().unwrap().to_owned();
    Container { args, env, port, liveness: path("livenessProbe"), readiness: path("readinessProbe") }
}

fn pairs(env: &BTreeMap<String, String>) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

#[test]
fn every_overlay_configures_only_keys_the_binary_knows() {
    let overlays = kubernetes_dir().join("overlays");
    let mut seen = 0;
    for overlay in std::fs::read_dir(&overlays).unwrap() {
        let overlay = overlay.unwrap().path();
        let objects = render(&overlay);
        let backend = container(&objects, "shardgate-backend", Some(&overlay.join("backend-secrets.example.env")));
        let loaded = Config::load_from(None, &pairs(&backend.env))
            .unwrap_or_else(|e| panic!("{}: the backend's variables: {e}", overlay.display()));
        assert!(loaded.unknown_env.is_empty(), "{}: {:?}", overlay.display(), loaded.unknown_env);
        assert!(loaded.config.storage.catalog_url.is_some(), "{}: a catalog URL", overlay.display());
        assert!(loaded.config.internal.secret.is_some(), "{}: the internal secret", overlay.display());
        assert_eq!(backend.args, ["serve", "--trusted"]);
        let gatekeeper =
            container(&objects, "shardgate-gatekeeper", Some(&overlay.join("gatekeeper-secrets.example.env")));
        let loaded = GatekeeperConfig::load_from(None, &pairs(&gatekeeper.env))
            .unwrap_or_else(|e| panic!("{}: the gatekeeper's variables: {e}", overlay.display()));
        assert!(loaded.unknown_env.is_empty(), "{}: {:?}", overlay.display(), loaded.unknown_env);
        assert!(!loaded.config.auth.issuers.is_empty(), "{}: the gatekeeper trusts an issuer", overlay.display());
        assert_eq!(gatekeeper.args[0], "gatekeeper");
        seen += 1;
    }
    assert!(seen >= 2, "the overlays are under {}", overlays.display());
}

/// Polls `GET base+path` until it answers 200, for at most 30 s; returns the body.
async fn wait_for_200(client: &reqwest::Client, process: &Process, path: &str) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(response) = client.get(format!("{}{path}", process.base)).send().await
            && response.status() == 200
        {
            return response.text().await.unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{}{path} did not answer 200 within 30 s; the log:\n{}",
            process.base,
            process.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_dev_overlay_starts_and_its_probes_answer_where_the_deployments_look() {
    let objects = render(&kubernetes_dir().join("overlays/dev"));
    let mut backend = container(&objects, "shardgate-backend", None);
    let mut gatekeeper = container(&objects, "shardgate-gatekeeper", None);
    let shards = backend.env["SHARDGATE_STORAGE__SHARDS"].matches("url=").count();
    let databases = Databases::create("k8s", shards).await;
    let urls: Vec<String> =
        (1..=shards).map(|i| format!("{{id=\"s{}\",url=\"{}\"}}", i - 1, databases.url(i))).collect();
    backend.env.insert("SHARDGATE_STORAGE__CATALOG_URL".into(), databases.url(0));
    backend.env.insert("SHARDGATE_STORAGE__SHARDS".into(), format!("[{}]", urls.join(",")));
    // The port is chosen by Process (the manifests' would collide on a shared machine), and
    // `--listen` and `--data-dir` override SHARDGATE_LISTEN and SHARDGATE_DATA_DIR.
    for container in [&mut backend, &mut gatekeeper] {
        container.env.remove("SHARDGATE_LISTEN");
        container.env.remove("SHARDGATE_DATA_DIR");
    }
    let backend_dir = tempfile::tempdir().unwrap();
    let args: Vec<&str> = backend.args.iter().map(String::as_str).collect();
    let backend_process = Process::start(&args, backend_dir.path(), &backend.env);
    let client = reqwest::Client::new();
    wait_for_200(&client, &backend_process, &backend.liveness).await;
    let readiness: Value =
        serde_json::from_str(&wait_for_200(&client, &backend_process, &backend.readiness).await).unwrap();
    assert_eq!(readiness["status"], "ready");
    assert_eq!(readiness["components"]["catalog"]["status"], "up");
    assert_eq!(readiness["components"]["s0"]["status"], "up");

    // The gatekeeper, pointed at this backend instead of the Service's name.
    let gatekeeper_dir = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = gatekeeper.args.iter().map(String::as_str).collect();
    let upstream = args.iter().position(|a| *a == "--upstream").expect("--upstream in the gatekeeper's args") + 1;
    assert_eq!(args[upstream], format!("http://shardgate-backend:{}", backend.port), "the backend Service's port");
    args[upstream] = &backend_process.base;
    let gatekeeper_process = Process::start(&args, gatekeeper_dir.path(), &gatekeeper.env);
    wait_for_200(&client, &gatekeeper_process, &gatekeeper.liveness).await;
    let forwarded: Value =
        serde_json::from_str(&wait_for_200(&client, &gatekeeper_process, &gatekeeper.readiness).await).unwrap();
    assert_eq!(forwarded["status"], "ready", "the backend's readiness, through the gatekeeper");

    // The two Secrets agree: a token of the dev issuer passes the gatekeeper, and the backend
    // takes the gatekeeper's internal credential.
    let issuers = &gatekeeper.env["SHARDGATE_AUTH__ISSUERS"];
    let field = |name: &str| issuers.split(&format!("{name}=\"")).nth(1).unwrap().split('"').next().unwrap().to_owned();
    let admin = admin_token(&field("issuer"), &field("secret"));
    let response =
        client.get(format!("{}/v1/admin/shards", gatekeeper_process.base)).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(response.status(), 200, "{}", response.text().await.unwrap());
    for process in [&backend_process, &gatekeeper_process] {
        assert!(!process.log().contains("names no configuration key"), "{}", process.log());
    }
    drop((backend_process, gatekeeper_process));
    databases.drop_all().await;
}

fn admin_token(issuer: &str, secret: &str) -> String {
    use jsonwebtoken::{EncodingKey, Header, encode};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let claims = serde_json::json!({"iss": issuer, "sub": "k8s-test", "scope": "admin", "iat": now, "exp": now + 600});
    encode(&Header::default(), &claims, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
}
