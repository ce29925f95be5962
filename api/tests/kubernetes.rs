//! The Kubernetes manifests (deploy/kubernetes/) as the cluster would run them: each overlay
//! rendered with `kubectl kustomize`, its ConfigMaps' and Secrets' variables loaded by the
//! configuration the binary reads, and the dev overlay's backend and gatekeeper started as real
//! processes with those variables and the files of the Secrets they mount (written where the
//! pods mount them, under a temporary directory), only the database URLs, the ports and the data
//! directory replaced by the test's: their probes answer where the Deployments look (HTTPS on
//! the backend), the admin plane is on the admin listeners only, and a tenant's request passes
//! the gatekeeper to the backend over HTTPS checked against the mounted CA.
//! Needs kubectl (scripts/kubectl.sh installs it) and PostgreSQL on 127.0.0.1:5432.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use kustomize::render;
use serde_json::Value;
use shardgate_api::config::{Config, GatekeeperConfig};
use shared_catalog::Databases;
use support::Process;

mod kustomize;
#[expect(dead_code, reason = "the test issuer's tokens are not used: the manifests name their own issuer")]
mod shared_catalog;
#[expect(dead_code, reason = "these stories use part of the process harness")]
mod support;

fn kubernetes_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/kubernetes")
}

fn object<'a>(objects: &'a [Value], kind: &str, name_prefix: &str) -> &'a Value {
    objects
        .iter()
        .find(|o| o["kind"] == kind && o["metadata"]["name"].as_str().is_some_and(|n| n.starts_with(name_prefix)))
        .unwrap_or_else(|| panic!("no {kind} {name_prefix}* in the rendering"))
}

/// One Deployment's (or Job's) container as the kubelet would run it: its arguments, its
/// environment (ConfigMap, then Secret, as `envFrom` lists them; a Secret absent from the
/// rendering is taken from `example_secrets`), its ports, its probes and the Secrets it mounts.
struct Container {
    args: Vec<String>,
    env: BTreeMap<String, String>,
    port: u16,
    /// The port named `admin`, if the container declares one.
    admin_port: Option<u16>,
    liveness: String,
    readiness: String,
    /// The probes' scheme, `http` or `https`.
    scheme: String,
    /// (mount path, Secret name) of each Secret volume it mounts.
    secret_mounts: Vec<(String, String)>,
}

fn container(objects: &[Value], deployment: &str, example_secrets: Option<&Path>) -> Container {
    workload_container(objects, "Deployment", deployment, example_secrets)
}

fn workload_container(objects: &[Value], kind: &str, deployment: &str, example_secrets: Option<&Path>) -> Container {
    let pod = &object(objects, kind, deployment)["spec"]["template"]["spec"];
    let spec = &pod["containers"][0];
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
    let volumes = pod["volumes"].as_array().cloned().unwrap_or_default();
    let secret_mounts = spec["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|mount| {
            let volume = volumes.iter().find(|v| v["name"] == mount["name"])?;
            let secret = volume["secret"]["secretName"].as_str()?;
            Some((mount["mountPath"].as_str().unwrap().to_owned(), secret.to_owned()))
        })
        .collect();
    if kind != "Deployment" {
        // A Job has no port and no probe.
        let none = String::new;
        return Container {
            args,
            env,
            port: 0,
            admin_port: None,
            liveness: none(),
            readiness: none(),
            scheme: none(),
            secret_mounts,
        };
    }
    let ports = spec["ports"].as_array().unwrap();
    let port_named = |name: &Value| {
        let port = ports.iter().find(|p| &p["name"] == name).unwrap_or_else(|| panic!("no port {name}"));
        u16::try_from(port["containerPort"].as_u64().unwrap()).unwrap()
    };
    let port = port_named(&spec["livenessProbe"]["httpGet"]["port"]);
    assert_eq!(port, port_named(&spec["readinessProbe"]["httpGet"]["port"]), "{deployment}: probes on one port");
    let listen = env.get("SHARDGATE_LISTEN").unwrap_or_else(|| panic!("{deployment}: no SHARDGATE_LISTEN"));
    assert_eq!(listen, &format!("0.0.0.0:{port}"), "{deployment}: listens where its probes and Service look");
    let admin_port = ports.iter().any(|p| p["name"] == "admin").then(|| port_named(&Value::from("admin")));
    let path = |probe: &str| spec[probe]["httpGet"]["path"].as_str().unwrap().to_owned();
    let scheme = spec["readinessProbe"]["httpGet"]["scheme"].as_str().unwrap_or("HTTP").to_lowercase();
    Container {
        args,
        env,
        port,
        admin_port,
        liveness: path("livenessProbe"),
        readiness: path("readinessProbe"),
        scheme,
        secret_mounts,
    }
}

/// Writes the files of each Secret `container` mounts (rendered in `objects`) under `root` at
/// its mount path, and points the variables that name a mounted path at the written copy.
fn mount_secrets(objects: &[Value], container: &mut Container, root: &Path) {
    for (mount_path, secret) in &container.secret_mounts {
        let dir = root.join(mount_path.trim_start_matches('/'));
        std::fs::create_dir_all(&dir).unwrap();
        let rendered = object(objects, "Secret", secret);
        for (key, value) in rendered["data"].as_object().unwrap() {
            let encoded: String = value.as_str().unwrap().split_whitespace().collect();
            let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).unwrap();
            std::fs::write(dir.join(key), bytes).unwrap();
        }
        let local = format!("{}/", dir.display());
        for value in container.env.values_mut() {
            *value = value.replace(&format!("{}/", mount_path.trim_end_matches('/')), &local);
        }
    }
}

/// Moves the admin listener of `container` from the manifests' `0.0.0.0:<admin port>` to a
/// free loopback port, and returns its `https://` base.
fn admin_on_a_free_port(container: &mut Container, name: &str) -> String {
    let admin_port = container.admin_port.unwrap_or_else(|| panic!("{name}: no port named admin"));
    let listen = container.env.get("SHARDGATE_ADMIN__LISTEN").unwrap_or_else(|| panic!("{name}: no admin listener"));
    assert_eq!(listen, &format!("0.0.0.0:{admin_port}"), "{name}: the admin listener is on the port `admin`");
    assert!(container.env.contains_key("SHARDGATE_ADMIN__TLS__CERT_FILE"), "{name}: the admin listener has TLS");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    container.env.insert("SHARDGATE_ADMIN__LISTEN".into(), format!("127.0.0.1:{port}"));
    format!("https://127.0.0.1:{port}")
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
        for issuer in &loaded.config.auth.issuers {
            assert!(!issuer.audience.is_empty(), "{}: {} has an audience", overlay.display(), issuer.issuer);
        }
        assert_eq!(gatekeeper.args[0], "gatekeeper");
        // The migration Job runs `shardgate migrate` with the backend's settings.
        let migrate = workload_container(
            &objects,
            "Job",
            "shardgate-migrate",
            Some(&overlay.join("backend-secrets.example.env")),
        );
        assert_eq!(migrate.args, ["migrate"]);
        assert_eq!(migrate.env, backend.env, "{}: the Job migrates what the backend serves", overlay.display());
        let loaded = Config::load_from(None, &pairs(&backend.env)).unwrap().config;
        assert!(!loaded.storage.migrate_on_start, "{}: the backend leaves migrations to the Job", overlay.display());
        seen += 1;
    }
    assert!(seen >= 2, "the overlays are under {}", overlays.display());
}

/// Polls `GET base+path` until it answers 200, for at most 30 s; returns the body.
async fn wait_for_200(client: &reqwest::Client, base: &str, process: &Process, path: &str) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(response) = client.get(format!("{base}{path}")).send().await
            && response.status() == 200
        {
            return response.text().await.unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{base}{path} did not answer 200 within 30 s; the log:\n{}",
            process.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn status_of(request: reqwest::RequestBuilder) -> u16 {
    request.send().await.unwrap().status().as_u16()
}

#[tokio::test]
async fn the_dev_overlay_starts_and_its_probes_answer_where_the_deployments_look() {
    let objects = render(&kubernetes_dir().join("overlays/dev"));
    let mounts = tempfile::tempdir().unwrap();
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
        mount_secrets(&objects, container, mounts.path());
    }
    let backend_admin = admin_on_a_free_port(&mut backend, "shardgate-backend");
    let gatekeeper_admin = admin_on_a_free_port(&mut gatekeeper, "shardgate-gatekeeper");
    // The mounted CA checks the listeners' certificate, as the gatekeeper and Prometheus do.
    let ca = std::fs::read(mounts.path().join("etc/shardgate/tls/ca.crt")).expect("the CA of shardgate-tls, mounted");
    let client =
        reqwest::Client::builder().add_root_certificate(reqwest::Certificate::from_pem(&ca).unwrap()).build().unwrap();

    // Migrations are the Job's (`shardgate migrate` with the same settings), then the backend.
    assert_eq!(backend.env["SHARDGATE_STORAGE__MIGRATE_ON_START"], "false");
    let backend_dir = tempfile::tempdir().unwrap();
    let migrate = support::finish(support::shardgate(&["migrate"], backend_dir.path()).envs(&backend.env));
    assert!(migrate.status.success(), "shardgate migrate: {}", String::from_utf8_lossy(&migrate.stderr));
    let args: Vec<&str> = backend.args.iter().map(String::as_str).collect();
    let backend_process = Process::start(&args, backend_dir.path(), &backend.env);
    assert_eq!(backend.scheme, "https", "the backend's probes use HTTPS");
    let backend_base = backend_process.base.replace("http://", "https://");
    wait_for_200(&client, &backend_base, &backend_process, &backend.liveness).await;
    let readiness: Value =
        serde_json::from_str(&wait_for_200(&client, &backend_base, &backend_process, &backend.readiness).await)
            .unwrap();
    assert_eq!(readiness["status"], "ready");
    assert_eq!(readiness["components"]["catalog"]["status"], "up");
    assert_eq!(readiness["components"]["s0"]["status"], "up");
    // The key file mounted from shardgate-secrets-key sealed the catalog's shard URLs (the Job's
    // `shardgate migrate` registered them sealed): a dump of the catalog shows none of them.
    let mut catalog = <sqlx::PgConnection as sqlx::Connection>::connect(&databases.url(0)).await.unwrap();
    let stored: Vec<String> = sqlx::query_scalar("SELECT url FROM shards").fetch_all(&mut catalog).await.unwrap();
    assert_eq!(stored.len(), shards);
    assert!(stored.iter().all(|url| url.starts_with("sealed:v1:")), "shard URLs stored in the clear: {stored:?}");

    // The gatekeeper, pointed at this backend instead of the Service's name.
    let gatekeeper_dir = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = gatekeeper.args.iter().map(String::as_str).collect();
    let upstream = args.iter().position(|a| *a == "--upstream").expect("--upstream in the gatekeeper's args") + 1;
    assert_eq!(args[upstream], format!("https://shardgate-backend:{}", backend.port), "the backend Service's port");
    args[upstream] = &backend_base;
    let gatekeeper_process = Process::start(&args, gatekeeper_dir.path(), &gatekeeper.env);
    let public = gatekeeper_process.base.clone();
    wait_for_200(&client, &public, &gatekeeper_process, &gatekeeper.liveness).await;
    let forwarded: Value =
        serde_json::from_str(&wait_for_200(&client, &public, &gatekeeper_process, &gatekeeper.readiness).await)
            .unwrap();
    assert_eq!(forwarded["status"], "ready", "the backend's readiness, through the gatekeeper");

    // The admin plane: on the admin listeners (what the Service shardgate-admin and the
    // ServiceMonitor reach), never on the public ones.
    let issuers = &gatekeeper.env["SHARDGATE_AUTH__ISSUERS"];
    let field = |name: &str| issuers.split(name).nth(1).unwrap().split('"').nth(1).unwrap().to_owned();
    let (issuer, secret, audience) = (field("issuer="), field("secret="), field("audience="));
    let admin = token(&issuer, &secret, &audience, serde_json::json!({"scope": "admin"}));
    let shards_at = |base: &str| client.get(format!("{base}/v1/admin/shards")).bearer_auth(&admin);
    let answer = shards_at(&backend_admin).send().await.unwrap();
    let status = answer.status();
    assert_eq!(
        status,
        200,
        "the admin API on the backend's admin listener ({backend_admin}): {}\n{}",
        answer.text().await.unwrap(),
        backend_process.log()
    );
    assert_eq!(status_of(shards_at(&public)).await, 404, "the gatekeeper does not forward the admin plane");
    for base in [&backend_admin, &gatekeeper_admin] {
        assert_eq!(status_of(client.get(format!("{base}/metrics"))).await, 200, "{base}/metrics, scraped");
    }
    assert_eq!(status_of(client.get(format!("{public}/metrics"))).await, 404);

    // The two Secrets agree: a token of the dev issuer passes the gatekeeper, and the backend
    // takes the gatekeeper's internal credential over HTTPS.
    let created = client
        .post(format!("{backend_admin}/v1/admin/tenants"))
        .bearer_auth(&admin)
        .json(&serde_json::json!({"id": "k8s"}));
    assert_eq!(status_of(created).await, 201);
    let tenant = token(&issuer, &secret, &audience, serde_json::json!({"tenant": "k8s", "scope": "read write"}));
    let put = client
        .put(format!("{public}/v1/tenants/k8s/collections/orders/records/o-1"))
        .bearer_auth(&tenant)
        .json(&serde_json::json!({"total": 1}));
    assert_eq!(status_of(put).await, 201, "a tenant's write through the gatekeeper");
    for process in [&backend_process, &gatekeeper_process] {
        assert!(!process.log().contains("names no configuration key"), "{}", process.log());
    }
    drop((backend_process, gatekeeper_process));
    databases.drop_all().await;
}

/// A token of the dev issuer for `audience`, with `claims` added to `iss`, `sub`, `aud`, `iat`
/// and `exp`.
fn token(issuer: &str, secret: &str, audience: &str, claims: Value) -> String {
    use jsonwebtoken::{EncodingKey, Header, encode};
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let mut all = serde_json::json!({"iss": issuer, "sub": "k8s-test", "aud": audience, "iat": now, "exp": now + 600});
    all.as_object_mut().unwrap().extend(claims.as_object().unwrap().clone());
    encode(&Header::default(), &all, &EncodingKey::from_secret(secret.as_bytes())).unwrap()
}
