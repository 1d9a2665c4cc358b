//! Notifications and teams: a team's gate announces its window edges and
//! notices only on the team's clusters (its writer scope, also for a
//! cluster registered later), another team's subscriber hears nothing of
//! it; and subscriptions are visible to unscoped admins and to their own
//! team only, over REST and gRPC; and a write routing its events with the clusters it
//! already read delivers exactly what routing by reading them delivers.

mod common;
mod grpc_support;
mod notify_support;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{Hub, t0};
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_proto::v1 as pb;
use grpc_support::{Grpc, authed};
use notify_support::{call_as, replica, subscribe};
use serde_json::{Value, json};

/// An admin token scoped to the clusters labelled `team: <team>`.
async fn team_admin(hub: &Hub, name: &str, team: &str) -> String {
    let r = hub
        .post_json(
            "/api/v1/tokens",
            &hub.admin,
            json!({"name": name, "role": "admin",
                   "scope": {"clusters": {"selector": {"matchLabels": {"team": team}}}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["secret"].as_str().unwrap().to_string()
}

/// What each delivery of subscription `name` is: (type, the event's clusters,
/// the clusters this subscriber gets (`None`: all of them)).
async fn deliveries(hub: &Hub, name: &str) -> Vec<(String, Value, Option<Vec<String>>)> {
    sqlx::query_as::<_, (String, Value, Option<Vec<String>>)>(
        "select e.type, e.data->'clusters', d.clusters from webhook_deliveries d \
         join webhooks w on w.id = d.webhook_id join notify_events e on e.id = d.event_id \
         where w.name = $1 and e.type like 'gate.%' order by d.id",
    )
    .bind(name)
    .fetch_all(&hub.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_team_gate_announces_its_edges_on_the_team_clusters_only() {
    let hub = Hub::new().await;
    hub.register("a1", json!({"env": "prod", "team": "a"}))
        .await;
    let team_a = team_admin(&hub, "team-a", "a").await;
    let team_b = team_admin(&hub, "team-b", "b").await;
    // Team a's freeze, selecting every prod cluster, written by team a.
    let start = (t0() + Duration::hours(1)).format("%Y-%m-%dT%H:%M:%S");
    let end = (t0() + Duration::hours(2)).format("%Y-%m-%dT%H:%M:%S");
    let yaml = format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: a-freeze}}\nspec:\n  \
         clusters: {{selector: {{matchLabels: {{env: prod}}}}}}\n  timeZone: UTC\n  \
         windows:\n    - {{name: freeze, kind: deny, start: \"{start}\", end: \"{end}\"}}\n"
    );
    let r = hub
        .call(
            Method::POST,
            "/api/v1/gates",
            Some(&team_a),
            Some(("application/yaml", yaml)),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    // Team b's prod cluster, registered afterwards: the gate never reaches it.
    hub.register("b1", json!({"env": "prod", "team": "b"}))
        .await;
    let (_r, router) = replica(&hub, "r1");
    let url = "http://127.0.0.1:9/hook"; // never called: the test reads the outbox
    subscribe(&router, common::ADMIN, json!({"name": "ops", "url": url})).await;
    subscribe(&router, &team_a, json!({"name": "a-hook", "url": url})).await;
    subscribe(&router, &team_b, json!({"name": "b-hook", "url": url})).await;

    let leads = [Duration::minutes(30)];
    hub.service.notify_scan(&leads).await.unwrap();
    hub.clock.set(t0() + Duration::minutes(31));
    hub.service.notify_scan(&leads).await.unwrap(); // gate.upcoming
    hub.clock.set(t0() + Duration::hours(1));
    hub.service.notify_scan(&leads).await.unwrap(); // gate.closed
    let a1 = json!(["a1"]);
    assert_eq!(
        deliveries(&hub, "ops").await,
        [
            ("gate.upcoming".to_string(), a1.clone(), None),
            ("gate.closed".to_string(), a1.clone(), None),
        ],
        "the event names the gate's clusters: not b1"
    );
    let mine = Some(vec!["a1".to_string()]);
    assert_eq!(
        deliveries(&hub, "a-hook").await,
        [
            ("gate.upcoming".to_string(), a1.clone(), mine.clone()),
            ("gate.closed".to_string(), a1.clone(), mine),
        ]
    );
    assert_eq!(deliveries(&hub, "b-hook").await, [], "nothing for team b");
}

#[tokio::test]
async fn subscriptions_are_seen_by_unscoped_admins_and_their_own_team() {
    let hub = Hub::new().await;
    let team_a = team_admin(&hub, "team-a", "a").await;
    let team_a2 = team_admin(&hub, "team-a-2", "a").await;
    let team_b = team_admin(&hub, "team-b", "b").await;
    let replica_ = Replica::new(hub.service.clone(), HttpOptions::default(), Grpc::opts())
        .with_notify(&notify_support::opts(), &EgressOptions::default())
        .unwrap();
    let router = fleetgate_hub::app(fleetgate_hub::AppState::from_replica(replica_.clone()));
    let url = "http://127.0.0.1:9/hook";
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "platform", "url": url}),
    )
    .await;
    // Every type the hub sends can be named (these were refused before).
    let types = [
        "approval.cancelled",
        "approval.expired",
        "rollout.aborted",
        "rollout.ended",
    ];
    subscribe(
        &router,
        &team_a,
        json!({"name": "a-hook", "url": url, "events": types}),
    )
    .await;
    subscribe(&router, &team_b, json!({"name": "b-hook", "url": url})).await;

    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .or_else(|| v["items"].as_array())
            .unwrap_or_else(|| panic!("a list: {v}"))
            .iter()
            .map(|w| w["spec"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    for (token, want) in [
        (common::ADMIN, &["a-hook", "b-hook", "platform"][..]),
        (&team_a, &["a-hook"]),
        (&team_a2, &["a-hook"]), // the same team, another admin
        (&team_b, &["b-hook"]),
    ] {
        let (status, list) = call_as(&router, token, Method::GET, "/api/v1/webhooks", None).await;
        assert_eq!(status, StatusCode::OK, "{list}");
        assert_eq!(names(&list), want);
    }
    // Another team's, or the platform's: as if it did not exist.
    for (method, uri) in [
        (Method::GET, "/api/v1/webhooks/platform"),
        (Method::GET, "/api/v1/webhooks/b-hook/deliveries"),
        (Method::POST, "/api/v1/webhooks/b-hook/rotate-secret"),
        (Method::DELETE, "/api/v1/webhooks/b-hook"),
    ] {
        let body = (method == Method::POST).then(|| json!({}));
        let (status, err) = call_as(&router, &team_a, method.clone(), uri, body).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{method} {uri}: {err}");
    }
    let (status, _) = call_as(
        &router,
        &team_a2,
        Method::GET,
        "/api/v1/webhooks/a-hook",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "a teammate's");
    let (_, list) = call_as(
        &router,
        common::ADMIN,
        Method::GET,
        "/api/v1/webhooks",
        None,
    )
    .await;
    assert_eq!(names(&list).len(), 3, "nothing was deleted");

    // gRPC AdminService: the same service decides.
    let grpc = Grpc::start_replica(replica_).await;
    let mut admin = grpc.admin();
    for (token, want) in [
        (common::ADMIN, &["a-hook", "b-hook", "platform"][..]),
        (&team_b, &["b-hook"]),
    ] {
        let got: Vec<String> = admin
            .list_webhooks(authed(pb::ListWebhooksRequest::default(), token))
            .await
            .unwrap()
            .into_inner()
            .webhooks
            .into_iter()
            .filter_map(|w| w.spec.map(|s| s.name))
            .collect();
        assert_eq!(got, want);
    }
    let err = admin
        .get_webhook(authed(
            pb::GetWebhookRequest {
                name: "platform".into(),
            },
            &team_b,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
}

/// Every delivery of event `id`: (subscription, cluster, the clusters it gets).
async fn routed(hub: &Hub, id: i64) -> Vec<(String, String, Option<Vec<String>>)> {
    sqlx::query_as(
        "select w.name, d.cluster, d.clusters from webhook_deliveries d \
         join webhooks w on w.id = d.webhook_id where d.event_id = $1 \
         order by w.name, d.cluster",
    )
    .bind(id)
    .fetch_all(&hub.pool)
    .await
    .unwrap()
}

/// A write that has read every cluster routes its events with them
/// (`outbox::enqueue_among`) instead of reading the event's clusters again: the
/// deliveries are exactly those of routing by reading them, for selector, name and
/// per-cluster subscriptions and team-scoped subscribers, with unregistered names too.
#[tokio::test]
async fn routing_with_a_writes_clusters_equals_reading_them() {
    use fleetgate_hub::db::{clusters, outbox};
    let hub = Hub::new().await;
    let mut names = Vec::new();
    for i in 0..12 {
        let name = format!("c{i:02}");
        let env = ["prod", "dev", "staging"][i % 3];
        let team = ["a", "b"][i % 2];
        hub.register(&name, json!({"env": env, "team": team})).await;
        names.push(name);
    }
    hub.simple_gate("g", &["c00"], "closed").await;
    let team_a = team_admin(&hub, "team-a", "a").await;
    let (_r, router) = replica(&hub, "r1");
    let url = "http://127.0.0.1:9/hook"; // never called: the test reads the outbox
    for (token, body) in [
        (common::ADMIN, json!({"name": "all", "url": url})),
        (
            common::ADMIN,
            json!({"name": "prod", "url": url, "clusters": {"selector": {"matchLabels": {"env": "prod"}}}}),
        ),
        (
            common::ADMIN,
            json!({"name": "each-not-dev", "url": url, "perCluster": true,
                   "clusters": {"selector": {"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["dev"]}]}}}),
        ),
        (
            common::ADMIN,
            json!({"name": "named", "url": url, "clusters": {"names": ["c01", "c04"]}}),
        ),
        (&team_a, json!({"name": "team-a", "url": url})),
        (
            &team_a,
            json!({"name": "team-a-each", "url": url, "perCluster": true}),
        ),
    ] {
        subscribe(&router, token, body).await;
    }
    let mut conn = hub.pool.acquire().await.unwrap();
    let known = clusters::scoped(&mut conn).await.unwrap();
    let picks: [&[usize]; 6] = [
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11],
        &[0],
        &[1],
        &[2, 4, 6],
        &[3, 5, 7, 9, 11],
        &[],
    ];
    let mut compared = 0;
    for (k, pick) in picks.iter().enumerate() {
        let mut named: Vec<String> = pick.iter().map(|&i| names[i].clone()).collect();
        if k % 2 == 0 {
            named.push("gone".into()); // named by the event, no longer registered
        }
        let event = |how: &str| fleetgate_hub::notify::NewEvent {
            event_type: "gate.closed".into(),
            subject: format!("gate/g-{how}-{k}"),
            dedup_key: None,
            occurred_at: t0(),
            gate: Some("g".into()),
            clusters: named.clone(),
            data: json!({"clusters": named}),
        };
        let read = outbox::enqueue(&mut conn, &event("read"))
            .await
            .unwrap()
            .unwrap();
        let known_id = outbox::enqueue_among(&mut conn, &event("known"), Some(&known))
            .await
            .unwrap()
            .unwrap();
        let (want, got) = (routed(&hub, read).await, routed(&hub, known_id).await);
        assert_eq!(got, want, "event {k}: {named:?}");
        compared += want.len();
    }
    assert!(
        compared > 20,
        "the events reached many subscriptions: {compared}"
    );
}
