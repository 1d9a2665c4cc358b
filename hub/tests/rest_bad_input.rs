//! Bad input, table-driven: malformed JSON/YAML, unknown fields, invalid
//! names, bad cron/rrule/zone/duration, `to` before `from`, huge bodies and
//! ranges. Each gets the right 4xx with a JSON error naming the field, and
//! nothing is written (no row, no audit entry, no revision bump).

mod common;

use axum::http::{Method, StatusCode};
use common::{Hub, simple_gate};
use serde_json::{Value, json};

struct Bad {
    method: Method,
    uri: &'static str,
    content_type: &'static str,
    body: String,
    status: u16,
    /// Expected `error.field`, or None when only the status matters.
    field: Option<&'static str>,
}

fn bad(
    method: Method,
    uri: &'static str,
    body: impl Into<String>,
    status: u16,
    field: Option<&'static str>,
) -> Bad {
    Bad {
        method,
        uri,
        content_type: "application/json",
        body: body.into(),
        status,
        field,
    }
}

fn yaml(mut b: Bad) -> Bad {
    b.content_type = "application/yaml";
    b
}

fn gate_with(patch: impl FnOnce(&mut Value)) -> String {
    let mut g = simple_gate("g2", &["a"], "closed");
    patch(&mut g);
    g.to_string()
}

fn window(w: Value) -> String {
    gate_with(|g| g["spec"]["windows"] = json!([w]))
}

#[tokio::test]
async fn bad_input_table() {
    let hub = Hub::with_body_limit(64 * 1024).await;
    hub.register("a", json!({"env": "prod"})).await;
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            simple_gate("g", &["a"], "closed"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);

    use Method as M;
    let cron =
        |s: &str| window(json!({"name": "w", "kind": "deny", "schedule": s, "duration": "1h"}));
    let cases = vec![
        // Malformed bodies → 400.
        bad(M::POST, "/api/v1/gates", "{", 400, Some("body")),
        bad(M::POST, "/api/v1/gates", "", 400, Some("body")),
        yaml(bad(
            M::POST,
            "/api/v1/gates",
            "a: [1,\n b",
            400,
            Some("body"),
        )),
        bad(
            M::POST,
            "/api/v1/clusters",
            "{\"name\": ",
            400,
            Some("body"),
        ),
        bad(M::POST, "/api/v1/gates/g/open", "[1,", 400, Some("body")),
        // Unknown fields and wrong types → 422 naming the field.
        bad(
            M::POST,
            "/api/v1/gates",
            gate_with(|g| g["spec"]["colour"] = json!("red")),
            422,
            None,
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            gate_with(|g| g["spec"]["default"] = json!("ajar")),
            422,
            Some("spec.default"),
        ),
        bad(
            M::POST,
            "/api/v1/clusters",
            json!({"name": "x", "lables": {}}).to_string(),
            422,
            None,
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/open",
            json!({"reason": "r", "for": "1h", "until": "x"}).to_string(),
            422,
            None,
        ),
        bad(
            M::POST,
            "/api/v1/tokens",
            json!({"name": "t", "role": 7}).to_string(),
            422,
            Some("role"),
        ),
        // Semantics → 422 with the field path.
        bad(
            M::POST,
            "/api/v1/gates",
            gate_with(|g| {
                g["spec"]["mode"] = json!("holdObjects");
                g["spec"]["targets"] = json!({"kinds": ["HelmRelease"]});
                g["spec"]["objects"] = json!({});
            }),
            422,
            Some("spec.targets.kinds[0]"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            gate_with(|g| g["spec"]["mode"] = json!("holdObjects")),
            422,
            Some("spec.objects"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            gate_with(|g| g["metadata"]["name"] = json!("Not_A_Name")),
            422,
            Some("metadata.name"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            gate_with(|g| g["apiVersion"] = json!("v0")),
            422,
            Some("apiVersion"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            gate_with(|g| g["spec"]["timeZone"] = json!("Mars/Olympus")),
            422,
            Some("spec.timeZone"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            cron("61 * * * *"),
            422,
            Some("spec.windows[0].schedule"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            cron("* * *"),
            422,
            Some("spec.windows[0].schedule"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            window(
                json!({"name": "w", "kind": "deny", "schedule": "0 8 * * *", "duration": "forever"}),
            ),
            422,
            Some("spec.windows[0].duration"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            window(
                json!({"name": "w", "kind": "deny", "rrule": "FREQ=SOMETIMES", "dtstart": "2026-01-01T00:00:00", "duration": "1h"}),
            ),
            422,
            Some("spec.windows[0].rrule"),
        ),
        bad(
            M::POST,
            "/api/v1/gates",
            window(
                json!({"name": "w", "kind": "deny", "start": "2026-12-31T00:00:00", "end": "2026-12-01T00:00:00"}),
            ),
            422,
            None,
        ),
        bad(
            M::PUT,
            "/api/v1/gates/g",
            simple_gate("other", &["a"], "open").to_string(),
            422,
            Some("metadata.name"),
        ),
        bad(
            M::POST,
            "/api/v1/clusters",
            json!({"name": "Prod_EU"}).to_string(),
            422,
            Some("name"),
        ),
        bad(
            M::POST,
            "/api/v1/clusters",
            json!({"name": "ok", "labels": {"env": "-x-"}}).to_string(),
            422,
            Some("labels.env"),
        ),
        bad(
            M::PUT,
            "/api/v1/clusters/a/labels",
            json!({"labels": {"bad key!": "x"}}).to_string(),
            422,
            None,
        ),
        bad(
            M::POST,
            "/api/v1/tokens",
            json!({"name": "t", "role": "root"}).to_string(),
            422,
            Some("role"),
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/open",
            json!({"for": "1 hour", "reason": "r"}).to_string(),
            422,
            Some("for"),
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/open",
            json!({"for": "9000h", "reason": "r"}).to_string(),
            422,
            Some("for"),
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/open",
            json!({"for": "1h"}).to_string(),
            422,
            Some("reason"),
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/open",
            json!({"for": "1h", "reason": "r", "clusters": {"names": ["ghost"]}}).to_string(),
            422,
            Some("clusters.names[0]"),
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/open",
            json!({"for": "1h", "reason": "r", "clusters": {}}).to_string(),
            422,
            Some("clusters"),
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/close",
            json!({"for": "1h", "reason": "r", "startsAt": "2020-01-01T00:00:00Z"}).to_string(),
            422,
            Some("startsAt"),
        ),
        bad(
            M::POST,
            "/api/v1/gates/g/close",
            json!({"for": "1h", "reason": "r", "startsAt": "+262000-01-01T00:00:00Z"}).to_string(),
            422,
            Some("startsAt"),
        ),
        bad(
            M::GET,
            "/api/v1/gates/g/preview?from=0001-01-01T00:00:00Z&to=0001-01-02T00:00:00Z",
            "",
            422,
            Some("from"),
        ),
        // Query strings.
        bad(
            M::GET,
            "/api/v1/gates/g/preview?from=2026-12-01T00:00:00Z&to=2026-11-01T00:00:00Z",
            "",
            422,
            Some("to"),
        ),
        bad(
            M::GET,
            "/api/v1/gates/g/preview?from=2026-01-01T00:00:00Z&to=2027-06-01T00:00:00Z",
            "",
            422,
            Some("to"),
        ),
        bad(
            M::GET,
            "/api/v1/gates/g/preview?from=yesterday",
            "",
            400,
            Some("from"),
        ),
        bad(
            M::GET,
            "/api/v1/gates/g/preview?frm=2026-01-01T00:00:00Z",
            "",
            400,
            Some("frm"),
        ),
        bad(M::GET, "/api/v1/gates?limit=0", "", 422, Some("limit")),
        bad(M::GET, "/api/v1/gates?limit=many", "", 400, None),
        bad(
            M::GET,
            "/api/v1/gates?cursor=%21%21",
            "",
            400,
            Some("cursor"),
        ),
        bad(
            M::GET,
            "/api/v1/audit?since=2026-12-01T00:00:00Z&until=2026-11-01T00:00:00Z",
            "",
            422,
            Some("until"),
        ),
        bad(
            M::DELETE,
            "/api/v1/overrides/not-a-uuid",
            "",
            400,
            Some("id"),
        ),
        bad(M::DELETE, "/api/v1/tokens/42", "", 400, Some("id")),
        // Not found.
        bad(M::GET, "/api/v1/gates/nope", "", 404, None),
        bad(
            M::POST,
            "/api/v1/gates/nope/open",
            json!({"for": "1h", "reason": "r"}).to_string(),
            404,
            None,
        ),
        bad(
            M::DELETE,
            "/api/v1/overrides/00000000-0000-0000-0000-000000000000",
            "",
            404,
            None,
        ),
        bad(M::GET, "/api/v1/nothing-here", "", 404, None),
        bad(M::PATCH, "/api/v1/gates/g", "{}", 405, None),
        // Huge body → 413.
        bad(
            M::POST,
            "/api/v1/gates",
            format!("{{\"x\": \"{}\"}}", "a".repeat(100 * 1024)),
            413,
            None,
        ),
    ];
    let before = hub.fingerprint().await;
    for c in &cases {
        let r = hub
            .call(
                c.method.clone(),
                c.uri,
                Some(&hub.admin),
                (!c.body.is_empty() || c.method != M::GET && c.method != M::DELETE)
                    .then(|| (c.content_type, c.body.clone())),
            )
            .await;
        let label = format!(
            "{} {} {}",
            c.method,
            c.uri,
            c.body.chars().take(120).collect::<String>()
        );
        assert_eq!(r.status.as_u16(), c.status, "{label}: {}", r.text);
        assert!(
            r.body["error"]["code"].is_string(),
            "{label}: not a JSON error: {}",
            r.text
        );
        assert!(r.body["error"]["message"].is_string(), "{label}");
        if let Some(f) = c.field {
            assert_eq!(r.body["error"]["field"], f, "{label}: {}", r.text);
        }
        if c.status == 422 && c.field.is_none() {
            assert!(
                r.body["error"]["field"].is_string(),
                "{label}: 422 without field: {}",
                r.text
            );
        }
    }
    assert_eq!(
        hub.fingerprint().await,
        before,
        "a rejected write changed something"
    );
}

#[tokio::test]
async fn other_content_types_and_bad_bytes() {
    let hub = Hub::new().await;
    let before = hub.fingerprint().await;
    let r = hub
        .call(
            Method::POST,
            "/api/v1/gates",
            Some(&hub.admin),
            Some(("text/plain", "x".into())),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNSUPPORTED_MEDIA_TYPE, "{}", r.text);
    let r = hub
        .call_with(
            Method::POST,
            "/api/v1/clusters",
            Some(&hub.admin),
            None,
            &[("content-type", "application/json")],
        )
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    let req = axum::http::Request::post("/api/v1/clusters")
        .header("authorization", format!("Bearer {}", hub.admin))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(vec![0xff, 0xfe, b'{']))
        .unwrap();
    use tower::ServiceExt as _;
    let resp = hub.app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(hub.fingerprint().await, before);
}

#[tokio::test]
async fn yaml_gate_bodies_are_accepted() {
    let hub = Hub::new().await;
    let r = hub
        .create_gate_yaml(&common::business_hours("bh", "prod"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    // A YAML schema error names the path too.
    let bad = common::business_hours("bh2", "prod")
        .replace("schedule: \"0 8 * * MON\"", "schedule: \"0 8 * * FUNDAY\"");
    let r = hub.create_gate_yaml(&bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "spec.windows[0].schedule");
}

/// A billion-laughs document (nine levels of nine aliases, under 1 KiB)
/// stops at the YAML parser's alias limit: 400 naming the limit, nothing written.
#[tokio::test]
async fn yaml_alias_bomb_is_rejected() {
    let hub = Hub::new().await;
    let before = hub.fingerprint().await;
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..=9 {
        let refs = vec![format!("*a{}", i - 1); 9].join(", ");
        text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    let r = hub.create_gate_yaml(&text).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("alias replay limit"), "{}", r.text);
    assert_eq!(hub.fingerprint().await, before);
}

#[tokio::test]
async fn framework_rejections_are_json_too() {
    let hub = Hub::new().await;
    // A path segment that is not UTF-8: axum's Path rejection, rewritten.
    let r = hub
        .call(Method::GET, "/api/v1/gates/%FF", Some(&hub.admin), None)
        .await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.text);
    assert_eq!(r.body["error"]["code"], "bad_request", "{}", r.text);

    // A request slower than the timeout: 408 with a JSON body, nothing
    // written. The write is held up deterministically by a lock on the
    // fleet-revision row, which every write takes first.
    let state = fleetgate_hub::AppState {
        timeout: std::time::Duration::from_millis(200),
        ..common::state(&hub.service)
    };
    let app = fleetgate_hub::app(state);
    let before = hub.fingerprint().await;
    let mut blocker = hub.pool.begin().await.unwrap();
    sqlx::query("select revision from fleet_revision for update")
        .execute(&mut *blocker)
        .await
        .unwrap();
    let req = axum::http::Request::post("/api/v1/clusters")
        .header("authorization", format!("Bearer {}", hub.admin))
        .header("content-type", "application/json")
        .body(axum::body::Body::from(json!({"name": "slow"}).to_string()))
        .unwrap();
    use tower::ServiceExt as _;
    let resp = app.oneshot(req).await.unwrap();
    blocker.rollback().await.unwrap();
    assert_eq!(resp.status(), StatusCode::REQUEST_TIMEOUT);
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(body["error"]["code"], "timeout");
    assert_eq!(hub.fingerprint().await, before, "a timed-out write wrote");
}
