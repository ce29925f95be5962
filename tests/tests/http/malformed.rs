//! Malformed requests get a 4xx problem, never a 500.

use reqwest::Method;
use shardgate_tests::{TestApp, assert_problem_shape, clip};

shardgate_tests::conformance!(malformed_requests_get_a_client_error_problem);

/// (method, path, auth, content type, body, expected status; 0 means any 4xx)
type Case<'a> = (Method, String, Auth, Option<&'a str>, String, u16);

enum Auth {
    Tenant,
    Admin,
    None,
}

async fn malformed_requests_get_a_client_error_problem(app: TestApp) {
    app.create_tenant("acme").await;
    let tenant = app.rw_token("acme");
    let admin = app.admin_token();
    let records = "/v1/tenants/acme/collections/docs/records";
    let long_key = "k".repeat(513);
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let json = Some("application/json");

    // (method, path, auth, content type, body, expected status)
    let cases: Vec<Case> = vec![
        (Method::GET, format!("{records}/%FF"), Auth::Tenant, None, String::new(), 400),
        (Method::PUT, format!("{records}/%FF%FE"), Auth::Tenant, json, "1".into(), 400),
        (Method::GET, format!("{records}/%C3%28"), Auth::Tenant, None, String::new(), 400),
        (Method::PUT, format!("{records}/{long_key}"), Auth::Tenant, json, "1".into(), 400),
        (Method::GET, format!("{records}/{long_key}"), Auth::Tenant, None, String::new(), 400),
        (Method::PUT, format!("{records}/ok"), Auth::Tenant, json, "{\"a\":".into(), 400),
        (Method::PUT, format!("{records}/ok"), Auth::Tenant, Some("text/plain"), "{}".into(), 415),
        (Method::PUT, format!("{records}/ok"), Auth::Tenant, None, "{}".into(), 415),
        (Method::PUT, format!("{records}/ok"), Auth::Tenant, Some("application/jsonp"), "{}".into(), 415),
        (
            Method::POST,
            "/v1/admin/tenants".into(),
            Auth::Admin,
            json,
            format!("{{\"id\":\"{}\"}}", "x".repeat(70_000)),
            413,
        ),
        (
            Method::GET,
            format!("/v1/tenants/acme/collections/docs/records/{}", "k".repeat(2100)),
            Auth::Tenant,
            None,
            String::new(),
            414,
        ),
        (Method::GET, format!("{records}?prefix=%FF"), Auth::Tenant, None, String::new(), 400),
        (Method::GET, format!("{records}?limit=99999999999999999999999"), Auth::Tenant, None, String::new(), 400),
        (Method::GET, format!("{records}?cursor=%25%25%25"), Auth::Tenant, None, String::new(), 400),
        (Method::GET, "/v1/tenants/ACME/collections/docs/records/k".into(), Auth::Tenant, None, String::new(), 0),
        (Method::GET, "/v1/tenants/a_b/collections/docs/records/k".into(), Auth::Tenant, None, String::new(), 0),
        (Method::GET, "/v1/tenants/-acme/collections/docs/records".into(), Auth::Tenant, None, String::new(), 0),
        (Method::GET, "/v1/tenants/%FF/collections/docs/records".into(), Auth::Tenant, None, String::new(), 0),
        (Method::GET, "/v1/nope".into(), Auth::Tenant, None, String::new(), 404),
        (Method::GET, "/".into(), Auth::None, None, String::new(), 404),
        (Method::GET, "/v1/tenants/acme/collections/docs".into(), Auth::Tenant, None, String::new(), 404),
        (Method::GET, "/v1/admin/nothing".into(), Auth::Admin, None, String::new(), 404),
        (Method::POST, format!("{records}/k"), Auth::Tenant, json, "1".into(), 405),
        (Method::PATCH, format!("{records}/k"), Auth::Tenant, json, "1".into(), 405),
        (Method::DELETE, records.into(), Auth::Tenant, None, String::new(), 405),
        (Method::PUT, "/v1/admin/shard-map".into(), Auth::Admin, json, "{}".into(), 405),
        (Method::POST, "/healthz".into(), Auth::None, None, String::new(), 405),
        (Method::POST, "/v1/admin/tenants".into(), Auth::Admin, json, "not json".into(), 400),
        (Method::POST, "/v1/admin/tenants".into(), Auth::Admin, json, "[]".into(), 400),
        (Method::POST, "/v1/admin/tenants".into(), Auth::Admin, json, deep.clone(), 400),
        (Method::POST, "/v1/admin/tenants".into(), Auth::Admin, Some("text/plain"), "{\"id\":\"x\"}".into(), 0),
        (Method::POST, "/v1/admin/tenants".into(), Auth::Admin, None, String::new(), 0),
        (Method::POST, "/v1/admin/shards".into(), Auth::Admin, json, "{\"id\":\"x\",\"url\":".into(), 400),
        (Method::PATCH, "/v1/admin/shards/shard-0".into(), Auth::Admin, json, "{\"state\":7}".into(), 400),
        (Method::PATCH, "/v1/admin/tenants/acme".into(), Auth::Admin, json, "{\"tier\":null,\"x\":1}".into(), 400),
        (Method::GET, "/v1/admin/tenants?limit=abc".into(), Auth::Admin, None, String::new(), 400),
        (
            Method::GET,
            "/v1/admin/route?tenant=acme&collection=docs&key=%FF".into(),
            Auth::Admin,
            None,
            String::new(),
            400,
        ),
        (
            Method::GET,
            format!("/v1/admin/route?tenant=acme&collection=docs&key={long_key}"),
            Auth::Admin,
            None,
            String::new(),
            400,
        ),
    ];
    let mut failures = Vec::new();
    for (method, path, auth, content_type, body, expected) in cases {
        let mut request = app.client.request(method.clone(), app.url(&path));
        match auth {
            Auth::Tenant => request = request.bearer_auth(&tenant),
            Auth::Admin => request = request.bearer_auth(&admin),
            Auth::None => {}
        }
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let response = request.body(body).send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let what = format!("{method} {}", &path[..path.len().min(120)]);
        let status_ok = if expected == 0 { status.is_client_error() } else { status.as_u16() == expected };
        if !status_ok {
            let wanted = if expected == 0 { "a 4xx".to_owned() } else { expected.to_string() };
            failures.push(format!("{what}: expected {wanted}, got {status}: {}", clip(&text)));
            continue;
        }
        let shape = std::panic::catch_unwind(|| assert_problem_shape(&headers, &text, &what));
        match shape {
            Ok(problem) if problem["status"] == status.as_u16() => {}
            Ok(problem) => failures.push(format!("{what}: problem status differs from {status}: {problem}")),
            Err(_) => {
                failures.push(format!("{what}: {status} is not a problem+json with x-request-id: {}", clip(&text)))
            }
        }
    }
    assert!(failures.is_empty(), "{} malformed requests were mishandled:\n{}", failures.len(), failures.join("\n"));

    // Valid but absurdly deep JSON is the server's call to store or refuse, never a crash.
    let response = app.put_raw(&format!("{records}/deep"), &tenant, "application/json", deep).await;
    let status = response.status();
    assert!(status.is_success() || status.is_client_error(), "deep JSON: {status}");
    let response = app.get_record("acme", "docs", "deep").await;
    assert!(!response.status().is_server_error(), "reading deep JSON back: {}", response.status());
}

/// Sends `GET <raw path>` exactly as written (HTTP clients normalise dot segments away) and
/// returns the status and body.
async fn raw_get(app: &TestApp, path: &str, token: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let address = app.base_url.trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, response)
}

#[tokio::test]
async fn dot_segments_and_encoded_controls_in_paths_are_refused() {
    let app = TestApp::spawn(shardgate_tests::Backend::Sqlite).await;
    app.create_tenant("acme").await;
    app.create_tenant("bob").await;
    let token = app.rw_token("acme");
    let records = "/v1/tenants/acme/collections/docs/records";
    for path in [
        "/v1/tenants/acme/../bob/collections/docs/records".to_owned(),
        "/v1/tenants/acme/%2e%2e/bob/collections/docs/records".to_owned(),
        format!("{records}/.."),
        format!("{records}/%2E%2e"),
        format!("{records}/."),
        format!("{records}/a%00b"),
        format!("{records}/a%0ab"),
        format!("{records}/a%zz"),
    ] {
        let (status, response) = raw_get(&app, &path, &token).await;
        assert_eq!(status, 400, "{path}: {response}");
        assert!(response.contains("\"code\":\"invalid_path\""), "{path}: {response}");
    }
    // An encoded slash is part of a key, and dots inside a segment are plain characters.
    for path in [format!("{records}/a%2F..%2Fb"), format!("{records}/..."), format!("{records}/a..b")] {
        let (status, response) = raw_get(&app, &path, &token).await;
        assert_eq!(status, 404, "{path}: {response}");
        assert!(response.contains("record_not_found"), "{path}: {response}");
    }
}

shardgate_tests::conformance!(oversized_request_heads_get_a_problem);

/// A request head past the gateway's limits (a request target over 8 KiB, more than 100 header
/// fields, a head over 64 KiB) is answered 414 or 431 problem+json, and one that is not HTTP/1.1
/// 400 problem+json, on every front.
async fn oversized_request_heads_get_a_problem(app: TestApp) {
    assert_oversized_heads_refused(app.base_url.trim_start_matches("http://"), 401).await;
}

#[tokio::test]
async fn oversized_request_heads_get_a_problem_on_the_valet_listener() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _app = TestApp::spawn_with(shardgate_tests::Backend::Sqlite, |c| {
        c.valet.listen = Some(format!("127.0.0.1:{port}").parse().unwrap());
    })
    .await;
    assert_oversized_heads_refused(&format!("127.0.0.1:{port}"), 404).await;
}

/// Sends each oversized head to `address` on a connection of its own and checks the answer; a
/// head just within the limits gets the service's own answer, `within_limits`.
async fn assert_oversized_heads_refused(address: &str, within_limits: u16) {
    let records = "/v1/tenants/acme/collections/docs/records";
    let many_headers: String = (0..200).map(|i| format!("x-filler-{i}: {i}\r\n")).collect();
    let cases = [
        ("a 9 KiB path", format!("GET {records}/{} HTTP/1.1\r\n", "k".repeat(9 * 1024)), 414, "uri_too_long"),
        ("a 9 KiB query", format!("GET {records}?prefix={} HTTP/1.1\r\n", "p".repeat(9 * 1024)), 414, "uri_too_long"),
        ("200 header fields", format!("GET {records} HTTP/1.1\r\n{many_headers}"), 431, "headers_too_large"),
        (
            "one 70 KB header field",
            format!("GET {records} HTTP/1.1\r\nx-big: {}\r\n", "v".repeat(70_000)),
            431,
            "headers_too_large",
        ),
        (
            "a head over 64 KiB",
            format!("GET {records}?q={} HTTP/1.1\r\n", "q".repeat(70_000)),
            431,
            "headers_too_large",
        ),
        ("a header name with a space", format!("GET {records} HTTP/1.1\r\nbad name: x\r\n"), 400, "invalid_request"),
    ];
    for (what, head_start, status, code) in cases {
        let head = format!("{head_start}Host: {address}\r\n\r\n");
        let (headers, body, got) = raw_exchange(address, head.as_bytes()).await;
        assert_eq!(got, status, "{what}: {body}");
        let problem = assert_problem_shape(&headers, &body, what);
        assert_eq!(problem["status"], status, "{what}: {problem}");
        assert_eq!(problem["code"], code, "{what}: {problem}");
        assert_eq!(headers["x-content-type-options"], "nosniff", "{what}");
    }
    // Just within every limit, the head reaches the service.
    let fields: String = (0..98).map(|i| format!("x-filler-{i}: {i}\r\n")).collect();
    let target = format!("{records}/{}?x={}", "k".repeat(2000), "x".repeat(6000));
    let big = "v".repeat(50_000);
    let head = format!("GET {target} HTTP/1.1\r\n{fields}x-big: {big}\r\nHost: {address}\r\n\r\n");
    let (_, body, got) = raw_exchange(address, head.as_bytes()).await;
    assert_eq!(got, within_limits, "a head within the limits: {body}");
}

/// Writes `request` on a fresh connection (ignoring a write cut short by the server's answer) and
/// reads the response until the server closes: its headers, body and status.
async fn raw_exchange(address: &str, request: &[u8]) -> (reqwest::header::HeaderMap, String, u16) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let stream = tokio::net::TcpStream::connect(address).await.unwrap();
    let (mut reader, mut writer) = stream.into_split();
    let request = request.to_vec();
    let sending = tokio::spawn(async move {
        let _ = writer.write_all(&request).await;
        writer
    });
    let mut response = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(10), async {
        let mut piece = [0u8; 4096];
        loop {
            match reader.read(&mut piece).await {
                Ok(0) => break,
                Ok(n) => {
                    response.extend_from_slice(&piece[..n]);
                    if response_complete(&response) {
                        break;
                    }
                }
                Err(e) => panic!("reading the answer failed after {} bytes: {e}", response.len()),
            }
        }
    })
    .await;
    assert!(read.is_ok(), "no complete answer in time: {}", String::from_utf8_lossy(&response));
    drop(sending);
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines.next().and_then(|l| l.split(' ').nth(1)).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut headers = reqwest::header::HeaderMap::new();
    for line in lines {
        if let Some((name, value)) = line.split_once(':') {
            headers.append(
                reqwest::header::HeaderName::from_bytes(name.trim().as_bytes()).unwrap(),
                value.trim().parse().unwrap(),
            );
        }
    }
    (headers, body.to_owned(), status)
}

/// Whether `response` holds a whole head and as many body bytes as its `content-length` says.
fn response_complete(response: &[u8]) -> bool {
    let text = String::from_utf8_lossy(response);
    let Some((head, body)) = text.split_once("\r\n\r\n") else { return false };
    let length = head
        .lines()
        .find_map(|l| l.split_once(':').filter(|(n, _)| n.eq_ignore_ascii_case("content-length")))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok());
    length.is_some_and(|length| body.len() >= length)
}

/// Bidirectional control characters (U+202A–202E, U+2066–2069) make a name read differently
/// than it is (`"admin\u{202e}gnp.exe"` shows as `adminexe.png`): refused with a 400 in record
/// keys, key bounds and blob paths (tenant ids, shard ids, collection and index names are ASCII).
#[tokio::test]
async fn names_with_bidirectional_controls_are_refused() {
    let app = TestApp::spawn(shardgate_tests::Backend::Sqlite).await;
    app.create_tenant("acme").await;
    let tenant = app.rw_token("acme");
    let records = "/v1/tenants/acme/collections/docs/records";
    let mut failures = Vec::new();
    for control in
        ['\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}', '\u{2069}']
    {
        let name = shardgate_tests::encode_segment(&format!("admin{control}gnp.exe"));
        let cases = [
            (Method::PUT, format!("{records}/{name}"), "application/json", "1".to_owned()),
            (Method::GET, format!("{records}?prefix={name}"), "application/json", String::new()),
            (Method::PUT, format!("/v1/tenants/acme/blobs/dir/{name}"), "application/octet-stream", "x".to_owned()),
        ];
        for (method, path, content_type, body) in cases {
            let response = app
                .client
                .request(method.clone(), app.url(&path))
                .bearer_auth(&tenant)
                .header("content-type", content_type)
                .body(body)
                .send()
                .await
                .unwrap();
            let status = response.status();
            let text = response.text().await.unwrap();
            if status != reqwest::StatusCode::BAD_REQUEST {
                failures.push(format!("{method} {path}: expected 400, got {status}: {}", clip(&text)));
            }
        }
    }
    for (i, control) in ['\u{202E}', '\u{2067}'].into_iter().enumerate() {
        let body = serde_json::json!({"id": format!("bidi-{i}"), "name": format!("admin{control}gnp.exe")});
        let status = app.admin(Method::POST, "/v1/admin/tenants", Some(&body)).await.status();
        if status != reqwest::StatusCode::BAD_REQUEST {
            failures.push(format!("POST /v1/admin/tenants with name {body}: expected 400, got {status}"));
        }
        let body = serde_json::json!({"name": format!("admin{control}gnp.exe")});
        let status = app.admin(Method::PATCH, "/v1/admin/tenants/acme", Some(&body)).await.status();
        if status != reqwest::StatusCode::BAD_REQUEST {
            failures.push(format!("PATCH /v1/admin/tenants/acme with name {body}: expected 400, got {status}"));
        }
    }
    assert!(failures.is_empty(), "{} names with bidi controls were taken:\n{}", failures.len(), failures.join("\n"));
}

/// The 1,440-point cap of the load series and the heat map holds for the step as it is used
/// (rounded down to whole windows), not as it was written: `step=19999ms` is a 10 s step.
#[tokio::test]
async fn the_point_cap_holds_after_the_step_is_rounded_down() {
    let app = TestApp::spawn(shardgate_tests::Backend::Sqlite).await;
    for path in ["/v1/admin/load/heatmap?since=28790s&step=19999ms", "/v1/admin/load?window=28790s&step=19999ms"] {
        let response = app.admin(Method::GET, path, None).await;
        let status = response.status();
        let text = response.text().await.unwrap();
        assert_eq!(status, reqwest::StatusCode::BAD_REQUEST, "{path}: {}", clip(&text));
        assert!(text.contains("1440 points"), "{path}: {text}");
    }
    // Within the cap after rounding: 28,780 s in steps of 20 s is 1,439 points.
    let response = app.admin(Method::GET, "/v1/admin/load/heatmap?since=28790s&step=20s", None).await;
    assert_eq!(response.status(), reqwest::StatusCode::OK);
}
