//! CRUD round trips through the REST router on a real database: gates (with
//! ETag / If-Match conflicts), clusters and their spoke tokens, API tokens,
//! pagination stability, and one audit row + revision bump per write.

mod common;

use axum::http::{Method, StatusCode};
use common::{Hub, business_hours, simple_gate};
use serde_json::json;

#[tokio::test]
async fn gate_round_trip_with_etag_and_conflict() {
    let hub = Hub::new().await;
    let audit0 = hub.audit_count().await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.headers["etag"], "\"1\"");
    assert_eq!(r.body["version"], 1);
    assert_eq!(r.body["manifest"]["spec"]["windows"][0]["duration"], "81h");

    let r = hub.get("/api/v1/gates/bh").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["etag"], "\"1\"");
    let mut manifest = r.body["manifest"].clone();

    // Same name again → 409.
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);

    // Replace with the right version.
    manifest["spec"]["default"] = json!("open");
    let put = |etag: &'static str, m: serde_json::Value| {
        let hub = &hub;
        async move {
            hub.call_with(
                Method::PUT,
                "/api/v1/gates/bh?reason=open%20by%20default",
                Some(&hub.admin),
                Some(("application/json", m.to_string())),
                &[("if-match", etag)],
            )
            .await
        }
    };
    let r = put("\"1\"", manifest.clone()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.headers["etag"], "\"2\"");
    assert_eq!(r.body["manifest"]["spec"]["default"], "open");

    // A writer still holding version 1 loses: 409, nothing changed.
    let before = hub.fingerprint().await;
    manifest["spec"]["default"] = json!("closed");
    let r = put("\"1\"", manifest.clone()).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert_eq!(r.body["error"]["code"], "conflict");
    assert_eq!(hub.fingerprint().await, before);

    // Delete with a stale version → 409; with the right one → 204.
    let r = hub
        .call_with(
            Method::DELETE,
            "/api/v1/gates/bh",
            Some(&hub.admin),
            None,
            &[("if-match", "\"1\"")],
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    let r = hub
        .call_with(
            Method::DELETE,
            "/api/v1/gates/bh",
            Some(&hub.admin),
            None,
            &[("if-match", "\"2\"")],
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    assert_eq!(
        hub.get("/api/v1/gates/bh").await.status,
        StatusCode::NOT_FOUND
    );

    // create, replace, delete: three audit rows, with before/after.
    assert_eq!(hub.audit_count().await, audit0 + 3);
    let r = hub.get("/api/v1/audit?targetKind=gate&target=bh").await;
    let items = r.body["items"].as_array().unwrap();
    let actions: Vec<&str> = items
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["gate.delete", "gate.replace", "gate.create"]);
    assert_eq!(items[1]["reason"], "open by default");
    assert_eq!(items[1]["before"]["spec"]["default"], "closed");
    assert_eq!(items[1]["after"]["spec"]["default"], "open");
    assert!(items.iter().all(|i| i["actor"] == "bootstrap-admin"));
}

#[tokio::test]
async fn concurrent_replaces_with_same_version_one_wins() {
    let hub = Hub::new().await;
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            simple_gate("g", &["a"], "open"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let mut tasks = Vec::new();
    for i in 0..8 {
        let app = hub.app.clone();
        let admin = hub.admin.clone();
        tasks.push(tokio::spawn(async move {
            use tower::ServiceExt as _;
            let body = simple_gate("g", &["a", &format!("c{i}")], "closed").to_string();
            let req = axum::http::Request::put("/api/v1/gates/g")
                .header("authorization", format!("Bearer {admin}"))
                .header("content-type", "application/json")
                .header("if-match", "\"1\"")
                .body(axum::body::Body::from(body))
                .unwrap();
            app.oneshot(req).await.unwrap().status()
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    let ok = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let conflict = statuses
        .iter()
        .filter(|s| **s == StatusCode::CONFLICT)
        .count();
    assert_eq!((ok, conflict), (1, 7), "{statuses:?}");
    assert_eq!(hub.get("/api/v1/gates/g").await.body["version"], 2);
}

#[tokio::test]
async fn cluster_lifecycle_and_spoke_tokens() {
    let hub = Hub::new().await;
    let token = hub.register("prod-eu-1", json!({"env": "prod"})).await;
    assert!(token.starts_with("fgs_"));
    let c = hub.service.authenticate_spoke(&token).await.unwrap();
    assert_eq!(c.name, "prod-eu-1");
    // The token is stored hashed only.
    let (n,): (i64,) = sqlx::query_as("select count(*) from clusters where token_hash = $1")
        .bind(token.as_bytes())
        .fetch_one(&hub.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);

    let r = hub.get("/api/v1/clusters/prod-eu-1").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["labels"]["env"], "prod");
    assert_eq!(r.body["connected"], false);
    assert!(r.body.get("token").is_none());

    let r = hub
        .call(
            Method::PUT,
            "/api/v1/clusters/prod-eu-1/labels",
            Some(&hub.admin),
            Some((
                "application/json",
                json!({"labels": {"env": "staging"}}).to_string(),
            )),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["labels"]["env"], "staging");

    let r = hub
        .call(
            Method::POST,
            "/api/v1/clusters/prod-eu-1/rotate-token",
            Some(&hub.admin),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let new_token = r.body["token"].as_str().unwrap().to_string();
    assert_ne!(new_token, token);
    assert!(hub.service.authenticate_spoke(&token).await.is_err());
    assert!(hub.service.authenticate_spoke(&new_token).await.is_ok());

    // A spoke token is not an API token.
    let r = hub
        .call(Method::GET, "/api/v1/clusters", Some(&new_token), None)
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);

    let r = hub
        .call(
            Method::DELETE,
            "/api/v1/clusters/prod-eu-1",
            Some(&hub.admin),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT);
    assert!(hub.service.authenticate_spoke(&new_token).await.is_err());
    assert_eq!(
        hub.get("/api/v1/clusters/prod-eu-1").await.status,
        StatusCode::NOT_FOUND
    );

    let r = hub.get("/api/v1/audit?targetKind=cluster").await;
    let actions: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "cluster.delete",
            "cluster.rotate_token",
            "cluster.relabel",
            "cluster.register"
        ]
    );
}

#[tokio::test]
async fn api_tokens_create_list_revoke() {
    let hub = Hub::new().await;
    let r = hub
        .post_json(
            "/api/v1/tokens",
            &hub.admin,
            json!({"name": "ci", "role": "operator"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let secret = r.body["secret"].as_str().unwrap().to_string();
    let id = r.body["token"]["id"].as_str().unwrap().to_string();
    assert!(secret.starts_with("fga_"));
    let r = hub
        .call(Method::GET, "/api/v1/gates", Some(&secret), None)
        .await;
    assert_eq!(r.status, StatusCode::OK);

    let r = hub.get("/api/v1/tokens").await;
    let names: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["bootstrap-admin", "ci", "ops", "reader"]);
    assert!(!r.text.contains("fga_"), "secrets never listed");

    let r = hub
        .call(
            Method::DELETE,
            &format!("/api/v1/tokens/{id}"),
            Some(&hub.admin),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.body["revokedAt"].is_string());
    let r = hub
        .call(Method::GET, "/api/v1/gates", Some(&secret), None)
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(r.headers["www-authenticate"], "Bearer realm=\"fleetgate\"");
}

#[tokio::test]
async fn bootstrap_admin_token_is_idempotent() {
    let hub = Hub::new().await;
    let before = hub.fingerprint().await;
    hub.service.ensure_admin_token(common::ADMIN).await.unwrap();
    assert_eq!(hub.fingerprint().await, before, "no write when unchanged");
    // A new secret replaces the old one.
    hub.service
        .ensure_admin_token("fga_another-secret-abcdefghij")
        .await
        .unwrap();
    assert!(hub.service.authenticate_api(common::ADMIN).await.is_err());
    let a = hub
        .service
        .authenticate_api("fga_another-secret-abcdefghij")
        .await
        .unwrap();
    assert_eq!(a.name, "bootstrap-admin");
}

#[tokio::test]
async fn pagination_is_stable_under_inserts() {
    let hub = Hub::new().await;
    for i in 0..25 {
        hub.register(&format!("c{i:02}"), json!({})).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let uri = match &cursor {
            Some(c) => format!("/api/v1/clusters?limit=10&cursor={c}"),
            None => "/api/v1/clusters?limit=10".to_string(),
        };
        let r = hub.get(&uri).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        for i in r.body["items"].as_array().unwrap() {
            seen.push(i["name"].as_str().unwrap().to_string());
        }
        pages += 1;
        if pages == 1 {
            // Rows inserted before and after the cursor while paging: the
            // rest of the walk neither repeats nor skips what it was walking.
            hub.register("a-early", json!({})).await;
            hub.register("zz-late", json!({})).await;
        }
        match r.body.get("nextCursor").and_then(|c| c.as_str()) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut expected: Vec<String> = (0..25).map(|i| format!("c{i:02}")).collect();
    expected.push("zz-late".into());
    assert_eq!(seen, expected);
    assert_eq!(pages, 3);

    // Audit pages (newest first) also walk without duplicates.
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let uri = match &cursor {
            Some(c) => format!("/api/v1/audit?limit=7&cursor={c}"),
            None => "/api/v1/audit?limit=7".to_string(),
        };
        let r = hub.get(&uri).await;
        for i in r.body["items"].as_array().unwrap() {
            ids.push(i["id"].as_i64().unwrap());
        }
        match r.body.get("nextCursor").and_then(|c| c.as_str()) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let mut sorted = ids.clone();
    sorted.sort_unstable_by(|a, b| b.cmp(a));
    sorted.dedup();
    assert_eq!(ids, sorted);
    assert_eq!(ids.len() as i64, hub.audit_count().await);
}

#[tokio::test]
async fn audit_log_is_append_only() {
    let hub = Hub::new().await;
    hub.register("a", json!({})).await;
    for sql in [
        "update audit_log set actor = 'x'",
        "delete from audit_log",
        "truncate audit_log",
    ] {
        let err = sqlx::query(sql).execute(&hub.pool).await.unwrap_err();
        assert!(err.to_string().contains("append-only"), "{sql}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_cluster_and_gate_writes_never_deadlock() {
    // Gate writes stamp the clusters they affect while cluster writes lock
    // their cluster first: without a common lock order these deadlock.
    let hub = Hub::new().await;
    for c in ["a", "b", "c"] {
        hub.register(c, json!({"env": "prod"})).await;
    }
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            simple_gate("g", &["a", "b", "c"], "open"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    let mut tasks = Vec::new();
    for i in 0..24 {
        let app = hub.app.clone();
        let admin = hub.admin.clone();
        tasks.push(tokio::spawn(async move {
            use tower::ServiceExt as _;
            let (method, uri, body) = match i % 3 {
                0 => (
                    "PUT",
                    "/api/v1/gates/g".to_string(),
                    simple_gate(
                        "g",
                        &["c", "b", "a"],
                        if i % 2 == 0 { "open" } else { "closed" },
                    ),
                ),
                1 => (
                    "PUT",
                    format!("/api/v1/clusters/{}/labels", ["a", "b", "c"][i % 3]),
                    json!({"labels": {"env": "prod", "n": i.to_string()}}),
                ),
                _ => (
                    "POST",
                    "/api/v1/gates/g/close".to_string(),
                    json!({"for": "1h", "reason": "r"}),
                ),
            };
            let req = axum::http::Request::builder()
                .method(method)
                .uri(&uri)
                .header("authorization", format!("Bearer {admin}"))
                .header("content-type", "application/json")
                .body(axum::body::Body::from(body.to_string()))
                .unwrap();
            let resp = app.oneshot(req).await.unwrap();
            (uri, resp.status())
        }));
    }
    for t in tasks {
        let (uri, status) = tokio::time::timeout(std::time::Duration::from_secs(60), t)
            .await
            .expect("write finished")
            .unwrap();
        assert!(status.is_success(), "{uri}: {status}");
    }
    assert_eq!(hub.audit_count().await, 3 + 4 + 24);
}

#[tokio::test]
async fn cluster_list_filters_by_label_selector_across_pages() {
    let hub = Hub::new().await;
    for i in 0..30 {
        let env = if i % 2 == 0 { "prod" } else { "dev" };
        hub.register(&format!("c{i:02}"), json!({"env": env, "n": i.to_string()}))
            .await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut uri = "/api/v1/clusters?limit=4&selector=env%3Dprod,n%20notin%20(4)".to_string();
        if let Some(c) = &cursor {
            uri.push_str(&format!("&cursor={c}"));
        }
        let r = hub.get(&uri).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        let items = r.body["items"].as_array().unwrap();
        assert!(items.len() <= 4);
        seen.extend(
            items
                .iter()
                .map(|i| i["name"].as_str().unwrap().to_string()),
        );
        match r.body.get("nextCursor").and_then(|c| c.as_str()) {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    let expected: Vec<String> = (0..30)
        .filter(|i| i % 2 == 0 && *i != 4)
        .map(|i| format!("c{i:02}"))
        .collect();
    assert_eq!(seen, expected);
    let r = hub.get("/api/v1/clusters?selector=env%20in%20(").await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "selector");
}

/// A schedule whose days changed with the Kubernetes CronJob dialect is accepted with a
/// warning naming the field, on create, get and replace; gates without one carry no
/// `warnings` key at all (the response shape older clients know).
#[tokio::test]
async fn changed_cron_meaning_is_a_warning_naming_the_field() {
    let hub = Hub::new().await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert!(r.body.get("warnings").is_none(), "{}", r.text);

    let stepped = business_hours("steps", "prod").replace("0 8 * * MON", "0 12 * * MON/2");
    let r = hub.create_gate_yaml(&stepped).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let warnings = r.body["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1, "{}", r.text);
    assert_eq!(warnings[0]["path"], "spec.windows[0].schedule");
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(
        message.contains("'MON/2' now means Mon,Wed,Fri (before: Sun,Mon,Wed,Fri)"),
        "{message}"
    );
    assert_eq!(
        hub.get("/api/v1/gates/steps").await.body["warnings"],
        r.body["warnings"]
    );

    let mut manifest = r.body["manifest"].clone();
    manifest["spec"]["windows"][0]["schedule"] = json!("0 12 * * MON,WED,FRI");
    let r = hub
        .call_with(
            Method::PUT,
            "/api/v1/gates/steps",
            Some(&hub.admin),
            Some(("application/json", manifest.to_string())),
            &[],
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(r.body.get("warnings").is_none(), "{}", r.text);
}
