//! The scope matrix: every operation × role × scope (in scope, out of scope,
//! partly in scope) for a team's principals, both an API token carrying a
//! scope and an OIDC person whose group an AccessPolicy names (the identity
//! is built in-process; the identity tests cover the real provider). Every
//! surface (REST, gRPC, dashboard, SSE, WatchFleet) calls these service
//! methods, so this is where the decisions are checked; a few REST calls
//! confirm the status codes.

mod common;

use axum::http::{Method, StatusCode};
use common::Hub;
use fleetgate_api_types::{AccessScope, GateScope, parse_access_policy};
use fleetgate_hub::service::types::{
    CreateToken, OverrideClusters, OverrideRequest, RegisterCluster,
};
use fleetgate_hub::service::{Identity, Person};
use fleetgate_hub::{Actor, Error, Role};
use fleetgate_policy::{ClusterScope, GateState, LabelSelector};
use serde_json::json;

async fn req(
    hub: &Hub,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<serde_json::Value>,
) -> common::Resp {
    let body = body.map(|b| ("application/json", b.to_string()));
    hub.call(method, uri, token, body).await
}

fn root() -> Actor {
    Actor::new("bootstrap-admin", Role::Admin)
}

fn team(t: &str) -> LabelSelector {
    LabelSelector {
        match_labels: [("team".to_string(), t.to_string())].into(),
        ..LabelSelector::default()
    }
}

fn gate(name: &str, team_label: &str, clusters: serde_json::Value) -> fleetgate_policy::Gate {
    fleetgate_policy::parse_gate_json(json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": name, "labels": {"team": team_label}},
        "spec": {"clusters": clusters, "default": "open"}
    }))
    .unwrap()
}

/// Clusters pay-1, pay-2 (team=payments, env=prod), web-1 (team=web,
/// env=prod); gates pay (payments' clusters), mixed (every cluster, labelled
/// payments: partly in scope) and web.
async fn fleet() -> Hub {
    let hub = Hub::new().await;
    for (name, t) in [
        ("pay-1", "payments"),
        ("pay-2", "payments"),
        ("web-1", "web"),
    ] {
        hub.register(name, json!({"team": t, "env": "prod"})).await;
    }
    let s = &hub.service;
    for g in [
        gate(
            "pay",
            "payments",
            json!({"selector": {"matchLabels": {"team": "payments"}}}),
        ),
        gate("mixed", "payments", json!({"selector": {}})),
        gate(
            "web",
            "web",
            json!({"selector": {"matchLabels": {"team": "web"}}}),
        ),
    ] {
        s.create_gate(&root(), g, None).await.unwrap();
    }
    hub
}

fn scope() -> AccessScope {
    AccessScope {
        clusters: Some(ClusterScope {
            names: vec![],
            selector: Some(team("payments")),
        }),
        gates: Some(GateScope {
            names: vec![],
            selector: Some(team("payments")),
        }),
    }
}

/// The team's principal with `role`: a scoped token, or a person in group
/// `payments` granted through an AccessPolicy.
async fn principal(hub: &Hub, role: Role, person: bool) -> Actor {
    let s = &hub.service;
    if !person {
        let req = CreateToken {
            name: format!("pay-{role}"),
            role: role.to_string(),
            scope: Some(scope()),
        };
        let t = s.create_token(&root(), req, None).await.unwrap();
        return s.authenticate_api(&t.secret).await.unwrap();
    }
    let policy = parse_access_policy(&format!(
        "apiVersion: fleetgate.io/v1\nkind: AccessPolicy\nmetadata: {{name: payments}}\n\
         spec:\n  subjects: {{groups: [payments]}}\n  role: {role}\n  scope:\n\
         \x20   clusters: {{selector: {{matchLabels: {{team: payments}}}}}}\n\
         \x20   gates: {{selector: {{matchLabels: {{team: payments}}}}}}\n"
    ))
    .unwrap();
    s.apply_access_policy(&root(), "payments", policy, None, None)
        .await
        .unwrap();
    s.resolve(Identity::Person(Person {
        issuer: "https://idp.example".into(),
        sub: "u-alice".into(),
        name: Some("Alice".into()),
        email: Some("alice@example.com".into()),
        groups: vec!["payments".into()],
    }))
    .await
    .unwrap()
}

fn forbidden<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) {
    assert!(matches!(r, Err(Error::Forbidden(_))), "{what}: {r:?}");
}

fn close(clusters: Option<Vec<&str>>) -> OverrideRequest {
    OverrideRequest {
        duration: Some("1h".into()),
        reason: "matrix".into(),
        clusters: clusters.map(|n| OverrideClusters {
            names: n.into_iter().map(String::from).collect(),
            selector: None,
        }),
        starts_at: None,
        ..Default::default()
    }
}

async fn reads_are_scoped(hub: &Hub, a: &Actor) {
    let s = &hub.service;
    let page = fleetgate_hub::service::PageRequest::default();
    let gates: Vec<String> = s
        .list_gates(a, &page)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|g| g.name)
        .collect();
    assert_eq!(gates, ["mixed", "pay"]);
    forbidden(s.get_gate(a, "web").await, "get out-of-scope gate");
    let clusters: Vec<String> = s
        .list_clusters_selected(a, &page, None)
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(clusters, ["pay-1", "pay-2"]);
    forbidden(s.get_cluster(a, "web-1").await, "get out-of-scope cluster");
    let status = s.fleet_status(a, None).await.unwrap();
    let seen: Vec<(String, Vec<String>)> = status
        .clusters
        .iter()
        .map(|c| {
            (
                c.cluster.name.clone(),
                c.gates.iter().map(|g| g.gate.clone()).collect(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            (
                "pay-1".to_string(),
                vec!["mixed".to_string(), "pay".to_string()]
            ),
            (
                "pay-2".to_string(),
                vec!["mixed".to_string(), "pay".to_string()]
            ),
        ]
    );
    assert_eq!(status.summary.clusters.total, 2);
    forbidden(
        s.cluster_status(a, "web-1").await,
        "status of out-of-scope cluster",
    );
    s.cluster_status(a, "pay-1").await.unwrap();
    let view = s.fleet_view(a).await.unwrap();
    assert!(
        view.gates.keys().all(|(g, c)| g != "web" && c != "web-1"),
        "{:?}",
        view.gates.keys()
    );
    assert_eq!(view.gates.len(), 4);
}

#[tokio::test]
async fn scope_matrix_tokens_and_people() {
    for person in [false, true] {
        for role in [Role::Viewer, Role::Operator, Role::Admin] {
            let hub = fleet().await;
            let s = &hub.service;
            let a = principal(&hub, role, person).await;
            let who = format!("{} {role}", if person { "person" } else { "token" });
            reads_are_scoped(&hub, &a).await;

            // Overrides: in scope, out of scope, partly in scope.
            let in_scope = s
                .create_override(&a, "pay", GateState::Closed, close(None))
                .await;
            let out = s
                .create_override(&a, "web", GateState::Closed, close(None))
                .await;
            let partly = s
                .create_override(&a, "mixed", GateState::Closed, close(None))
                .await;
            let named_out = s
                .create_override(&a, "mixed", GateState::Closed, close(Some(vec!["web-1"])))
                .await;
            forbidden(out, &format!("{who}: override out of scope"));
            forbidden(named_out, &format!("{who}: naming an out-of-scope cluster"));
            if role < Role::Operator {
                forbidden(in_scope, &format!("{who}: viewer override"));
                forbidden(partly, &format!("{who}: viewer override"));
            } else {
                let o = in_scope.unwrap();
                assert!(
                    o.narrowed.is_some(),
                    "{who}: the answer says it was narrowed"
                );
                let p = partly.unwrap();
                assert!(
                    p.narrowed.as_deref().unwrap().contains("team=payments"),
                    "{p:?}"
                );
                // The gate-wide close through the team covers its clusters only.
                let st = s.fleet_status(&root(), None).await.unwrap();
                let state = |c: &str, g: &str| {
                    let b = st.clusters.iter().find(|b| b.cluster.name == c).unwrap();
                    b.closed_by.contains(&g.to_string())
                };
                assert!(state("pay-1", "mixed") && state("pay-2", "mixed"), "{who}");
                assert!(!state("web-1", "mixed"), "{who}: web-1 stays open");
                s.cancel_override(&a, p.id, None).await.unwrap();
                // A root's gate-wide override on the mixed gate reaches web-1 too: the team
                // cannot cancel it.
                let wide = s
                    .create_override(&root(), "mixed", GateState::Open, close(None))
                    .await
                    .unwrap();
                forbidden(
                    s.cancel_override(&a, wide.id, None).await,
                    &format!("{who}: cancel partly out"),
                );
            }

            // Gate writes: a scoped admin writes its own gates only, within its clusters.
            let mine = gate(
                "team-new",
                "payments",
                json!({"selector": {"matchLabels": {"team": "payments"}}}),
            );
            let wide = gate("team-wide", "payments", json!({"selector": {}}));
            let foreign = gate(
                "team-foreign",
                "web",
                json!({"selector": {"matchLabels": {"team": "payments"}}}),
            );
            let moved = gate(
                "pay",
                "web",
                json!({"selector": {"matchLabels": {"team": "payments"}}}),
            );
            if role < Role::Admin {
                forbidden(
                    s.create_gate(&a, mine, None).await,
                    &format!("{who}: create gate"),
                );
            } else {
                s.create_gate(&a, mine, None).await.unwrap();
                forbidden(
                    s.create_gate(&a, wide, None).await,
                    &format!("{who}: selects web-1"),
                );
                forbidden(
                    s.create_gate(&a, foreign, None).await,
                    &format!("{who}: foreign label"),
                );
                forbidden(
                    s.replace_gate(&a, "pay", moved, None, None).await,
                    &format!("{who}: move out"),
                );
                forbidden(
                    s.delete_gate(&a, "web", None, None).await,
                    &format!("{who}: delete web"),
                );
                forbidden(
                    s.delete_gate(&a, "mixed", None, None).await,
                    &format!("{who}: delete partly"),
                );
                // Enforced for clusters registered later: an env=prod gate written by the
                // team never reaches a web cluster registered afterwards.
                let prod = gate(
                    "team-prod",
                    "payments",
                    json!({"names": ["pay-1"], "selector": {"matchLabels": {"team": "payments", "env": "prod"}}}),
                );
                s.create_gate(&a, prod, None).await.unwrap();
                let relabel = gate(
                    "team-prod",
                    "payments",
                    json!({"selector": {"matchLabels": {"env": "prod"}}}),
                );
                forbidden(
                    s.replace_gate(&a, "team-prod", relabel, None, None).await,
                    &format!("{who}: widen"),
                );
                let req = RegisterCluster {
                    name: "web-2".into(),
                    labels: [
                        ("team".to_string(), "web".to_string()),
                        ("env".to_string(), "prod".to_string()),
                    ]
                    .into(),
                    ..Default::default()
                };
                s.register_cluster(&root(), req, None).await.unwrap();
                let st = s.fleet_status(&root(), None).await.unwrap();
                let web2 = st
                    .clusters
                    .iter()
                    .find(|b| b.cluster.name == "web-2")
                    .unwrap();
                assert!(
                    web2.gates
                        .iter()
                        .all(|g| g.gate != "team-prod" && g.gate != "team-new"),
                    "{who}"
                );
            }

            // Management needs an unscoped admin.
            let req = CreateToken {
                name: "x".into(),
                role: "viewer".into(),
                scope: None,
            };
            forbidden(
                s.create_token(&a, req, None).await,
                &format!("{who}: tokens"),
            );
            let req = RegisterCluster {
                name: "c9".into(),
                labels: Default::default(),
                ..Default::default()
            };
            forbidden(
                s.register_cluster(&a, req, None).await,
                &format!("{who}: clusters"),
            );
            forbidden(
                s.list_access_policies(&a, &Default::default()).await,
                &format!("{who}: policies"),
            );

            // The audit log: the team sees entries about its gates and clusters only,
            // and a person's entries name them and what granted the change.
            let q = fleetgate_hub::service::audit::AuditQuery::default();
            let entries = s.list_audit(&a, &q).await.unwrap().items;
            assert!(!entries.is_empty());
            assert!(
                entries.iter().all(
                    |e| ["pay", "mixed", "pay-1", "pay-2", "team-new", "team-prod"]
                        .contains(&e.target_name.as_str())
                ),
                "{who}: {:?}",
                entries.iter().map(|e| &e.target_name).collect::<Vec<_>>()
            );
            if person && role >= Role::Operator {
                let q = fleetgate_hub::service::audit::AuditQuery {
                    person: Some("Alice@example.com".into()),
                    team: Some("payments".into()),
                    ..Default::default()
                };
                let mine = s.list_audit(&root(), &q).await.unwrap().items;
                let e = mine.first().expect("alice's entries");
                assert_eq!(e.actor, "alice@example.com");
                assert_eq!(e.actor_kind.as_deref(), Some("person"));
                assert_eq!(e.actor_issuer.as_deref(), Some("https://idp.example"));
                assert_eq!(e.actor_subject.as_deref(), Some("u-alice"));
                assert_eq!(
                    e.granted_by.as_deref(),
                    Some(&["policy payments (group payments)".to_string()][..])
                );
            }
        }
    }
}

#[tokio::test]
async fn rest_answers_403_and_policies_apply_over_rest() {
    let hub = fleet().await;
    let t = hub
        .service
        .create_token(
            &root(),
            CreateToken {
                name: "pay-op".into(),
                role: "operator".into(),
                scope: Some(scope()),
            },
            None,
        )
        .await
        .unwrap()
        .secret;
    let r = hub
        .post_json("/api/v1/gates/web/close", &t, json!({"reason": "r"}))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let r = hub
        .post_json(
            "/api/v1/gates/mixed/close",
            &t,
            json!({"reason": "r", "clusters": {"names": ["web-1"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let r = hub
        .post_json("/api/v1/gates/mixed/close", &t, json!({"reason": "r"}))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert!(
        r.body["narrowed"]
            .as_str()
            .unwrap()
            .contains("team=payments"),
        "{}",
        r.text
    );
    let r = req(&hub, Method::GET, "/api/v1/gates/web", Some(&t), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = req(&hub, Method::GET, "/api/v1/access-policies", Some(&t), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // A bad policy: 422 naming the field, nothing stored.
    let bad = json!({"apiVersion": "fleetgate.io/v1", "kind": "AccessPolicy",
        "metadata": {"name": "p"}, "spec": {"subjects": {}, "role": "viewer"}});
    let r = req(
        &hub,
        Method::PUT,
        "/api/v1/access-policies/p",
        Some(&hub.admin),
        Some(bad),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "spec.subjects");
    let good = json!({"apiVersion": "fleetgate.io/v1", "kind": "AccessPolicy",
        "metadata": {"name": "p"}, "spec": {"subjects": {"tokens": ["pay-op"]}, "role": "viewer"}});
    let r = req(
        &hub,
        Method::PUT,
        "/api/v1/access-policies/p",
        Some(&hub.admin),
        Some(good.clone()),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = req(
        &hub,
        Method::PUT,
        "/api/v1/access-policies/p",
        Some(&hub.admin),
        Some(good),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    // Now the token also views everything (an unscoped viewer grant): the union.
    let r = req(&hub, Method::GET, "/api/v1/gates/web", Some(&t), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let r = req(
        &hub,
        Method::DELETE,
        "/api/v1/access-policies/p",
        Some(&hub.admin),
        None,
    )
    .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let r = req(&hub, Method::GET, "/api/v1/gates/web", Some(&t), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
}
