//! The `shardgate` binary in a Kubernetes pod: a Service named `shardgate` makes Kubernetes set
//! `SHARDGATE_PORT`, `SHARDGATE_SERVICE_HOST` and friends in every pod of its namespace. The
//! gateway starts anyway and names the variables it ignores.

use support::Process;

#[expect(dead_code, reason = "these tests use part of the process harness")]
mod support;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_service_variables_are_reported_and_do_not_stop_the_gateway() {
    let dir = tempfile::tempdir().unwrap();
    let variables = [
        ("SHARDGATE_PORT", "tcp://10.96.0.12:8080"),
        ("SHARDGATE_PORT_8080_TCP_PROTO", "tcp"),
        ("SHARDGATE_SERVICE_HOST", "10.96.0.12"),
        ("SHARDGATE_SERVICE_PORT", "8080"),
    ];
    let gateway = Process::start(&["serve"], dir.path(), variables);
    gateway.wait_until_ok(&reqwest::Client::new(), "/readyz").await;
    // The other commands load the configuration the same way.
    let minted = support::shardgate(&["token", "--admin"], dir.path()).envs(variables).output().unwrap();
    assert!(minted.status.success(), "{}", String::from_utf8_lossy(&minted.stderr));
    let admin = String::from_utf8(minted.stdout).unwrap().trim().to_owned();
    gateway.create_tenant(&reqwest::Client::new(), &admin, "acme").await;
    // The warnings are logged before the gateway listens; the log is read as it comes.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    while variables.iter().any(|(variable, _)| !gateway.log().contains(variable)) {
        assert!(tokio::time::Instant::now() < deadline, "a warning names each variable: {}", gateway.log());
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
