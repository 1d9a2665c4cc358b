//! The dashboard's server side without a browser: pages and assets with a
//! strict CSP, `whoami`, the grid and gate-page read endpoints, and the
//! server-sent event stream (auth, `ready` first, changes, end at shutdown).

mod common;
mod grpc_support;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode, header};
use common::{Hub, prod_pair_gated};
use fleetgate_hub::{AppState, app};
use grpc_support::served::Sse;
use grpc_support::within;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

#[tokio::test]
async fn pages_and_assets_are_served_with_a_strict_csp() {
    let hub = Hub::new().await;
    let page = hub.call(Method::GET, "/", None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let csp = page.headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"),
        "{csp}"
    );
    assert!(!csp.contains("unsafe"), "{csp}");
    // No inline script: every <script> loads a file.
    for tag in page.text.split("<script").skip(1) {
        assert!(
            tag.split('>').next().unwrap().contains("src="),
            "inline script: {tag}"
        );
    }
    assert!(!page.text.contains("style="), "inline style in the shell");

    // Every module the app imports is served, as JavaScript.
    let mut todo = vec!["main.js".to_string()];
    let mut seen = Vec::new();
    while let Some(name) = todo.pop() {
        if seen.contains(&name) {
            continue;
        }
        let r = hub
            .call(Method::GET, &format!("/assets/{name}"), None, None)
            .await;
        assert_eq!(r.status, StatusCode::OK, "/assets/{name}");
        assert!(
            r.headers[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("text/javascript")
        );
        assert_eq!(r.headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        for part in r.text.split("from './").skip(1) {
            todo.push(part.split('\'').next().unwrap().to_string());
        }
        seen.push(name);
    }
    assert!(seen.len() >= 8, "{seen:?}");
    let css = hub.call(Method::GET, "/assets/app.css", None, None).await;
    assert!(
        css.headers[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );

    let missing = hub.call(Method::GET, "/assets/nope.js", None, None).await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.body["error"]["code"], "not_found");
}

#[tokio::test]
async fn whoami_names_the_token_and_its_role() {
    let hub = Hub::new().await;
    let r = hub
        .call(Method::GET, "/api/v1/whoami", Some(&hub.operator), None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body, json!({"name": "ops", "role": "operator"}));
    let r = hub
        .call(Method::GET, "/api/v1/whoami", Some(&hub.viewer), None)
        .await;
    assert_eq!(r.body["role"], "viewer");
    let r = hub.call(Method::GET, "/api/v1/whoami", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = hub
        .call(Method::GET, "/api/v1/whoami", Some("fga_wrong"), None)
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn auth_config_tells_the_page_whether_a_session_cookie_came_along() {
    // The sign-in page asks whoami only when there is a cookie to ask about: a visitor who
    // never signed in is not a refused request (no 401 in the browser's console).
    let hub = Hub::new().await;
    let r = hub
        .call(Method::GET, "/api/v1/auth/config", None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["sessionCookie"], false, "{}", r.text);
    let cookie = [("cookie", "theme=dark; fleetgate_session=s3cret")];
    let r = hub
        .call_with(Method::GET, "/api/v1/auth/config", None, None, &cookie)
        .await;
    assert_eq!(r.body["sessionCookie"], true, "{}", r.text);
    let other = [("cookie", "theme=dark")];
    let r = hub
        .call_with(Method::GET, "/api/v1/auth/config", None, None, &other)
        .await;
    assert_eq!(r.body["sessionCookie"], false, "{}", r.text);
}

#[tokio::test]
async fn fleet_grid_has_every_gate_on_every_cluster_with_held_per_gate() {
    let hub = prod_pair_gated().await;
    // A spoke of `a` reported one held object governed by g.
    sqlx::query(
        "insert into object_status (cluster, kind, namespace, name, suspended, suspended_by, gates, \
         last_applied_revision, newest_source_revision, held, suspended_by_human, reported_at) \
         values ('a', 'Kustomization', 'apps', 'web', true, '{g}', '{g}', 'r1', 'r2', true, false, now())",
    )
    .execute(&hub.pool)
    .await
    .unwrap();
    let r = hub
        .call(
            Method::GET,
            "/api/v1/dashboard/fleet",
            Some(&hub.viewer),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["gates"], json!(["g"]));
    let rows = r.body["clusters"].as_array().unwrap();
    let row = |n: &str| rows.iter().find(|c| c["name"] == n).cloned().unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(row("a")["cells"][0]["state"], "closed");
    assert_eq!(row("a")["cells"][0]["held"], 1);
    assert_eq!(row("a")["held"], 1);
    assert_eq!(row("a")["labels"], json!({"env": "prod"}));
    assert_eq!(row("a")["connected"], false);
    assert_eq!(row("b")["cells"][0]["held"], 0);
    assert!(
        row("a")["cells"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("default")
    );
    assert_eq!(row("c")["cells"][0], Value::Null, "g does not govern c");

    let r = hub
        .call(Method::GET, "/api/v1/dashboard/fleet", None, None)
        .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn gate_page_has_rules_timeline_overrides_and_scope() {
    let hub = prod_pair_gated().await;
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "CHG-1", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = hub
        .call(
            Method::GET,
            "/api/v1/dashboard/gates/g",
            Some(&hub.viewer),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["gate"]["name"], "g");
    assert_eq!(r.body["timeZone"], "UTC");
    assert!(
        r.body["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l.as_str().unwrap().contains("closed (default)"))
    );
    assert_eq!(r.body["preview"]["initial"]["state"], "closed");
    assert_eq!(r.body["overrides"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["overrides"][0]["reason"], "CHG-1");
    let clusters = r.body["clusters"].as_array().unwrap();
    let state = |n: &str| {
        clusters
            .iter()
            .find(|c| c["name"] == n)
            .map(|c| c["state"].clone())
    };
    assert_eq!(clusters.len(), 2);
    assert_eq!(state("a"), Some(json!("open")));
    assert_eq!(state("b"), Some(json!("closed")));

    let r = hub
        .call(
            Method::GET,
            "/api/v1/dashboard/gates/nope",
            Some(&hub.viewer),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn event_stream_needs_a_token_starts_ready_streams_changes_and_ends_at_shutdown() {
    let hub = prod_pair_gated().await;
    let shutdown = CancellationToken::new();
    let app = app(AppState {
        shutdown: shutdown.clone(),
        // The request timeout bounds the time to the response head, not the
        // stream: events keep flowing long after it.
        timeout: Duration::from_millis(300),
        ..common::state(&hub.service)
    });
    let get = |token: Option<&str>| {
        let mut req = Request::builder().method(Method::GET).uri("/api/v1/events");
        if let Some(t) = token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        req.body(Body::empty()).unwrap()
    };
    let r = app.clone().oneshot(get(None)).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
    let r = app.clone().oneshot(get(Some("fga_nope"))).await.unwrap();
    assert_eq!(r.status(), StatusCode::UNAUTHORIZED);

    let r = app.clone().oneshot(get(Some(&hub.viewer))).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()[header::CONTENT_TYPE], "text/event-stream");
    let mut sse = Sse::of(r);
    sse.next("ready", |_| true).await;

    tokio::time::sleep(Duration::from_millis(600)).await; // past the request timeout
    // A change through the API arrives as events with JSON data.
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "CHG-2", "clusters": {"names": ["b"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    // Only the change's events: the initial state (gate g on a and b) is not replayed.
    let (mut gate, mut over) = (None, None);
    within("the change's gate and override events", async {
        while gate.is_none() || over.is_none() {
            let (name, data) = sse.next_any().await;
            match name.as_str() {
                "gate" => {
                    assert_eq!(data["cluster"], "b", "initial state replayed: {data}");
                    gate = Some(data);
                }
                "override" => over = Some(data),
                _ => {}
            }
        }
    })
    .await;
    let ev = gate.unwrap();
    assert_eq!(ev["gate"], "g");
    assert_eq!(ev["cluster"], "b");
    assert_eq!(ev["from"], "closed");
    assert_eq!(ev["to"], "open");
    assert!(ev["reason"].as_str().unwrap().contains("CHG-2"));
    let over = over.unwrap();
    assert_eq!(over["reason"], "CHG-2", "{over}");

    // Shutdown ends the stream, so the server can drain.
    shutdown.cancel();
    sse.end("the stream to end at shutdown").await;
}

#[tokio::test]
async fn event_stream_ends_with_an_error_event_when_the_token_is_revoked() {
    let hub = prod_pair_gated().await;
    let mut sse = Sse::open(&hub.app, &hub.viewer).await;
    sse.next("ready", |_| true).await;

    let tokens = hub.get("/api/v1/tokens").await;
    let id = tokens.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "reader")
        .map(|t| t["id"].as_str().unwrap().to_string())
        .unwrap();
    let r = hub
        .call(
            Method::DELETE,
            &format!("/api/v1/tokens/{id}"),
            Some(&hub.admin),
            None,
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);

    let error = sse.next("error", |_| true).await;
    assert_eq!(error["code"], "Unauthenticated", "{error}");
    sse.end("the stream to end after the error").await;
}
