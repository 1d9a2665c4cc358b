//! The role matrix: every route × (no token, viewer, operator, admin).
//! Without a token → 401 with `WWW-Authenticate`; a role below the route's
//! minimum → 403; at or above → the route's success status. Also: every
//! routed path appears in the OpenAPI document.

mod common;

use std::sync::atomic::{AtomicU32, Ordering};

use axum::http::{Method, StatusCode};
use common::{Hub, simple_gate};
use fleetgate_hub::Actor;
use fleetgate_hub::Role;
use fleetgate_hub::service::types::{CreateToken, OverrideRequest, RegisterCluster};
use serde_json::json;

struct Case {
    method: Method,
    uri: &'static str,
    body: Option<serde_json::Value>,
    min: Role,
    ok: StatusCode,
}

fn case(method: Method, uri: &'static str, min: Role, ok: u16) -> Case {
    Case {
        method,
        uri,
        body: None,
        min,
        ok: StatusCode::from_u16(ok).unwrap(),
    }
}

fn with_body(mut c: Case, body: serde_json::Value) -> Case {
    c.body = Some(body);
    c
}

/// A hub with cluster `a` (env=prod) and a closed gate `g` on it.
async fn hub_with_cluster_a_and_gate_g() -> Hub {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.simple_gate("g", &["a"], "closed").await;
    hub
}

/// Every caller kind: no token, then each role's token.
fn roles(hub: &Hub) -> [(Option<Role>, Option<String>); 4] {
    [
        (None, None),
        (Some(Role::Viewer), Some(hub.viewer.clone())),
        (Some(Role::Operator), Some(hub.operator.clone())),
        (Some(Role::Admin), Some(hub.admin.clone())),
    ]
}

static N: AtomicU32 = AtomicU32::new(0);

/// Replaces placeholders with fresh objects so each call has its own target:
/// `{n}` a counter, `{gate}` a new gate, `{cluster}` a new cluster,
/// `{override}` a new live override, `{token}` a new API token.
async fn fill(hub: &Hub, s: &str) -> String {
    let root = Actor::new("bootstrap-admin", Role::Admin);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let mut s = s.replace("{n}", &n.to_string());
    if s.contains("{gate}") {
        let name = format!("fresh-gate-{n}");
        let gate = fleetgate_policy::parse_gate_json(simple_gate(&name, &["a"], "open")).unwrap();
        hub.service.create_gate(&root, gate, None).await.unwrap();
        s = s.replace("{gate}", &name);
    }
    if s.contains("{cluster}") {
        let name = format!("fresh-cluster-{n}");
        let req = RegisterCluster {
            name: name.clone(),
            labels: Default::default(),
            ..Default::default()
        };
        hub.service
            .register_cluster(&root, req, None)
            .await
            .unwrap();
        s = s.replace("{cluster}", &name);
    }
    if s.contains("{override}") {
        let req = OverrideRequest {
            duration: Some("1h".into()),
            reason: "matrix".into(),
            ..Default::default()
        };
        let o = hub
            .service
            .create_override(&root, "g", fleetgate_policy::GateState::Open, req)
            .await
            .unwrap();
        s = s.replace("{override}", &o.id.to_string());
    }
    if s.contains("{token}") {
        let req = CreateToken {
            name: format!("fresh-token-{n}"),
            role: "viewer".into(),
            scope: None,
        };
        let t = hub.service.create_token(&root, req, None).await.unwrap();
        s = s.replace("{token}", &t.token.id.to_string());
    }
    s
}

#[tokio::test]
async fn every_route_by_every_role() {
    let hub = hub_with_cluster_a_and_gate_g().await;

    use Method as M;
    use Role::*;
    let cases = vec![
        case(M::GET, "/api/v1/gates", Viewer, 200),
        case(M::GET, "/api/v1/gates/g", Viewer, 200),
        case(M::GET, "/api/v1/gates/g/preview", Viewer, 200),
        case(M::GET, "/api/v1/overrides", Viewer, 200),
        case(M::GET, "/api/v1/clusters", Viewer, 200),
        case(M::GET, "/api/v1/clusters/a", Viewer, 200),
        case(M::GET, "/api/v1/clusters/a/status", Viewer, 200),
        case(M::GET, "/api/v1/status", Viewer, 200),
        case(M::GET, "/api/v1/status/clusters", Viewer, 200),
        case(M::GET, "/api/v1/audit", Viewer, 200),
        case(M::GET, "/api/v1/tokens", Admin, 200),
        with_body(
            case(M::POST, "/api/v1/gates/g/open", Operator, 201),
            json!({"for": "1h", "reason": "hotfix"}),
        ),
        with_body(
            case(M::POST, "/api/v1/gates/g/close", Operator, 201),
            json!({"for": "1h", "reason": "incident", "clusters": {"names": ["a"]}}),
        ),
        case(M::DELETE, "/api/v1/overrides/{override}", Operator, 200),
        with_body(
            case(M::POST, "/api/v1/gates", Admin, 201),
            simple_gate("new-gate-{n}", &["a"], "open"),
        ),
        with_body(
            case(M::PUT, "/api/v1/gates/{gate}", Admin, 200),
            json!("REPLACE"),
        ),
        case(M::DELETE, "/api/v1/gates/{gate}", Admin, 204),
        with_body(
            case(M::POST, "/api/v1/clusters", Admin, 201),
            json!({"name": "new-cluster-{n}", "labels": {"env": "dev"}}),
        ),
        with_body(
            case(M::PUT, "/api/v1/clusters/{cluster}/labels", Admin, 200),
            json!({"labels": {"env": "qa"}}),
        ),
        case(
            M::POST,
            "/api/v1/clusters/{cluster}/rotate-token",
            Admin,
            200,
        ),
        case(M::DELETE, "/api/v1/clusters/{cluster}", Admin, 204),
        with_body(
            case(M::POST, "/api/v1/tokens", Admin, 201),
            json!({"name": "new-token-{n}", "role": "viewer"}),
        ),
        case(M::DELETE, "/api/v1/tokens/{token}", Admin, 200),
        case(M::GET, "/api/v1/freezes", Viewer, 200),
        // The emergency stop is an admin's (issue 38); the admin's freeze is ended next.
        with_body(
            case(M::POST, "/api/v1/freezes", Admin, 201),
            json!({"reason": "INC-1", "for": "1h"}),
        ),
        with_body(
            case(M::POST, "/api/v1/freezes/end", Admin, 200),
            json!({"reason": "resolved"}),
        ),
    ];
    let roles = roles(&hub);
    for c in &cases {
        for (role, token) in &roles {
            let uri = fill(&hub, c.uri).await;
            let body = match &c.body {
                // A replace body names the gate in the URI.
                Some(b) if b == &json!("REPLACE") => {
                    let name = uri.rsplit('/').next().unwrap();
                    Some(simple_gate(name, &["a"], "closed"))
                }
                Some(b) => Some(serde_json::from_str(&fill(&hub, &b.to_string()).await).unwrap()),
                None => None,
            };
            let r = hub
                .call(
                    c.method.clone(),
                    &uri,
                    token.as_deref(),
                    body.map(|b| ("application/json", b.to_string())),
                )
                .await;
            let want = match role {
                None => StatusCode::UNAUTHORIZED,
                Some(r) if *r < c.min => StatusCode::FORBIDDEN,
                Some(_) => c.ok,
            };
            assert_eq!(r.status, want, "{} {uri} as {role:?}: {}", c.method, r.text);
            if want == StatusCode::UNAUTHORIZED {
                assert!(r.headers.contains_key("www-authenticate"));
                assert_eq!(r.body["error"]["code"], "unauthenticated");
            }
            if want == StatusCode::FORBIDDEN {
                assert_eq!(r.body["error"]["code"], "forbidden");
            }
        }
    }

    // Public endpoints need no token.
    for uri in ["/healthz", "/readyz", "/metrics", "/api/v1/openapi.json"] {
        let r = hub.call(Method::GET, uri, None, None).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}");
    }
    // A garbage or malformed Authorization header is a 401, not a 500.
    for h in ["Bearer fga_nope", "Basic YWJjOmRlZg==", "Bearer"] {
        let r = hub
            .call_with(
                Method::GET,
                "/api/v1/gates",
                None,
                None,
                &[("authorization", h)],
            )
            .await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{h}");
    }
    // The metrics count requests by route template.
    let m = hub.call(Method::GET, "/metrics", None, None).await.text;
    assert!(
        m.contains("route=\"/api/v1/gates/{name}\""),
        "metrics lack route labels:\n{m}"
    );
}

#[tokio::test]
async fn openapi_documents_every_route_with_errors() {
    let hub = Hub::new().await;
    let r = hub
        .call(Method::GET, "/api/v1/openapi.json", None, None)
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let doc = &r.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    let expected = [
        ("/api/v1/gates", vec!["get", "post"]),
        ("/api/v1/gates/{name}", vec!["get", "put", "delete"]),
        ("/api/v1/gates/{name}/preview", vec!["get"]),
        ("/api/v1/gates/{name}/open", vec!["post"]),
        ("/api/v1/gates/{name}/close", vec!["post"]),
        ("/api/v1/gates/{name}/rollout", vec!["get"]),
        ("/api/v1/gates/{name}/rollout/{command}", vec!["post"]),
        ("/api/v1/overrides", vec!["get"]),
        ("/api/v1/overrides/{id}", vec!["delete"]),
        ("/api/v1/clusters", vec!["get", "post"]),
        ("/api/v1/clusters/{name}", vec!["get", "delete"]),
        ("/api/v1/clusters/{name}/labels", vec!["put"]),
        ("/api/v1/clusters/{name}/rotate-token", vec!["post"]),
        ("/api/v1/clusters/{name}/jwks", vec!["put"]),
        ("/api/v1/version", vec!["get"]),
        ("/api/v1/clusters/{name}/status", vec!["get"]),
        ("/api/v1/status", vec!["get"]),
        ("/api/v1/status/clusters", vec!["get"]),
        ("/api/v1/audit", vec!["get"]),
        ("/api/v1/tokens", vec!["get", "post"]),
        ("/api/v1/tokens/{id}", vec!["delete"]),
        ("/healthz", vec!["get"]),
        ("/readyz", vec!["get"]),
        ("/metrics", vec!["get"]),
        ("/api/v1/whoami", vec!["get"]),
        ("/api/v1/dashboard/fleet", vec!["get"]),
        ("/api/v1/dashboard/gates/{name}", vec!["get"]),
        ("/api/v1/events", vec!["get"]),
        ("/api/v1/webhooks", vec!["get", "post"]),
        ("/api/v1/webhooks/{name}", vec!["get", "put", "delete"]),
        ("/api/v1/webhooks/{name}/rotate-secret", vec!["post"]),
        ("/api/v1/webhooks/{name}/test", vec!["post"]),
        ("/api/v1/webhooks/{name}/deliveries", vec!["get"]),
        ("/api/v1/webhooks/{name}/deliveries/{id}", vec!["get"]),
        (
            "/api/v1/webhooks/{name}/deliveries/{id}/redeliver",
            vec!["post"],
        ),
        ("/api/v1/auth/config", vec!["get"]),
        ("/api/v1/auth/login", vec!["post"]),
        ("/api/v1/auth/logout", vec!["post"]),
        ("/api/v1/sessions", vec!["get"]),
        ("/api/v1/sessions/end", vec!["post"]),
        ("/api/v1/auth/sessions", vec!["get"]),
        ("/api/v1/auth/sessions/end", vec!["post"]),
        ("/api/v1/access-policies", vec!["get"]),
        (
            "/api/v1/access-policies/{name}",
            vec!["get", "put", "delete"],
        ),
        ("/api/v1/freezes", vec!["get", "post"]),
        ("/api/v1/freezes/end", vec!["post"]),
        ("/api/v1/approvals", vec!["get"]),
        ("/api/v1/approvals/{id}", vec!["get", "delete"]),
        ("/api/v1/approvals/{id}/approve", vec!["post"]),
        ("/api/v1/approvals/{id}/reject", vec!["post"]),
        ("/api/v1/admission-webhooks", vec!["get"]),
        (
            "/api/v1/admission-webhooks/{name}",
            vec!["get", "put", "delete"],
        ),
        ("/api/v1/webhooks/{name}/enable", vec!["post"]),
        ("/api/v1/webhooks/{name}/disable", vec!["post"]),
    ];
    // What a browser or CLI reads before anyone signed in.
    let public = [
        "/api/v1/auth/config",
        "/api/v1/auth/login",
        "/api/v1/version",
    ];
    for (path, methods) in &expected {
        let item = paths
            .get(*path)
            .unwrap_or_else(|| panic!("{path} missing from OpenAPI"));
        for m in methods {
            let op = &item[*m];
            assert!(op.is_object(), "{m} {path} missing");
            if path.starts_with("/api/") && !public.contains(path) {
                let responses = op["responses"].as_object().unwrap();
                for code in ["401", "408", "500"] {
                    assert!(responses.contains_key(code), "{m} {path} lacks {code}");
                }
                if op["requestBody"].is_object() {
                    for code in ["413", "415"] {
                        assert!(responses.contains_key(code), "{m} {path} lacks {code}");
                    }
                }
                assert!(op["security"].is_array(), "{m} {path} lacks security");
            }
        }
    }
    assert_eq!(paths.len(), expected.len(), "undocumented or extra paths");
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    // Every $ref resolves to a component schema.
    fn refs(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                if let Some(r) = m.get("$ref").and_then(|r| r.as_str()) {
                    out.push(r.to_string());
                }
                m.values().for_each(|v| refs(v, out));
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let mut all = Vec::new();
    refs(doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("unexpected $ref {r}"));
        assert!(schemas.contains_key(name), "dangling $ref {r}");
    }
    // Gate bodies are described field by field, JSON and YAML.
    let body = &paths["/api/v1/gates"]["post"]["requestBody"]["content"];
    assert_eq!(
        body["application/json"]["schema"]["$ref"],
        "#/components/schemas/GateManifest"
    );
    assert!(body["application/yaml"].is_object());
    for s in [
        "ErrorBody",
        "GateRecord",
        "GateManifest",
        "WindowDoc",
        "OverrideRequest",
        "ClusterStatus",
        "FleetSummary",
    ] {
        assert!(schemas.contains_key(s), "schema {s} missing");
    }
}

/// Bad input of every kind to every write route: without a token 401, with a
/// role below the route's minimum 403 (the role is checked before the body,
/// query, path id or `If-Match` is looked at), at or above it the input
/// error. Nothing is written either way.
#[tokio::test]
async fn bad_input_gets_403_below_the_routes_role_whatever_the_body() {
    let hub = hub_with_cluster_a_and_gate_g().await;

    use Method as M;
    use Role::*;
    let body_routes = [
        (M::POST, "/api/v1/gates/g/open", Operator),
        (M::POST, "/api/v1/gates/g/close", Operator),
        (M::POST, "/api/v1/gates", Admin),
        (M::PUT, "/api/v1/gates/g", Admin),
        (M::POST, "/api/v1/clusters", Admin),
        (M::PUT, "/api/v1/clusters/a/labels", Admin),
        (M::POST, "/api/v1/tokens", Admin),
    ];
    let bodies: [(&str, &str, u16); 3] = [
        ("application/json", "{\"spec\": ", 400),
        ("application/json", "{\"nope\": 1}", 422),
        ("text/plain", "hello", 415),
    ];
    let mut cases: Vec<BadCase> = Vec::new();
    for (method, uri, min) in &body_routes {
        for (ct, text, bad) in bodies {
            cases.push(BadCase {
                method: method.clone(),
                uri,
                min: *min,
                body: Some((ct, text.to_string())),
                headers: vec![],
                bad,
            });
        }
    }
    // Bad query, path id or If-Match on routes without a body.
    let no_body = |method: M, uri, min, headers| BadCase {
        method,
        uri,
        min,
        body: None,
        headers,
        bad: 400,
    };
    cases.extend([
        no_body(M::DELETE, "/api/v1/overrides/not-a-uuid", Operator, vec![]),
        no_body(M::DELETE, "/api/v1/tokens/not-a-uuid", Admin, vec![]),
        no_body(
            M::DELETE,
            "/api/v1/gates/g",
            Admin,
            vec![("if-match", "\"x\"")],
        ),
        no_body(M::DELETE, "/api/v1/clusters/a?bogus=1", Admin, vec![]),
        no_body(
            M::POST,
            "/api/v1/clusters/a/rotate-token?bogus=1",
            Admin,
            vec![],
        ),
    ]);

    let audit_before = hub.audit_count().await;
    let roles = roles(&hub);
    for BadCase {
        method,
        uri,
        min,
        body,
        headers,
        bad,
    } in &cases
    {
        for (role, token) in &roles {
            let r = hub
                .call_with(method.clone(), uri, token.as_deref(), body.clone(), headers)
                .await;
            let want = match role {
                None => StatusCode::UNAUTHORIZED,
                Some(r) if r < min => StatusCode::FORBIDDEN,
                Some(_) => StatusCode::from_u16(*bad).unwrap(),
            };
            assert_eq!(
                r.status, want,
                "{method} {uri} {body:?} {headers:?} as {role:?}: {}",
                r.text
            );
            if want == StatusCode::FORBIDDEN {
                assert_eq!(r.body["error"]["code"], "forbidden", "{}", r.text);
            }
        }
    }
    assert_eq!(
        hub.audit_count().await,
        audit_before,
        "bad input wrote something"
    );
}

/// One bad request: what the route needs and what a privileged caller gets.
struct BadCase {
    method: Method,
    uri: &'static str,
    min: Role,
    body: Option<(&'static str, String)>,
    headers: Vec<(&'static str, &'static str)>,
    bad: u16,
}
