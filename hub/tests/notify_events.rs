//! The events other hub writes put in the outbox, delivered to a real local
//! HTTP receiver and checked with the Standard Webhooks reference library:
//! `gate.opened`/`gate.closed` of manifest writes (create, replace,
//! delete: only the clusters whose state changed now, once per write), a
//! rollout's `started`, `wave_released`, `halted`, `completed` and `ended`, a fleet
//! freeze's `freeze.started` and `freeze.ended`, `spoke.disconnected` after
//! the grace period and `spoke.connected` (once across two scanning
//! services), `changes.held` from status reports, and a scoped subscriber
//! receiving only its own clusters' events.

mod common;
mod notify_support;
mod rollout_support;

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{Hub, t0};
use fleetgate_hub::Service;
use fleetgate_hub::db::reports::ReportedObject;
use fleetgate_hub::service::reports::{Assembled, Reports};
use notify_support::{Received, next, receiver, replica, run_notifier, subscribe, verify};
use serde_json::{Value, json};

/// `name` on `clusters`, closed unless an allow window (Wednesdays 13:00 UTC
/// for an hour: t0 is Wed 12:00) or `default` opens it.
fn gate(name: &str, clusters: &str, default: &str, description: &str) -> String {
    format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {name}}}\nspec:\n  \
         description: {description}\n  clusters: {clusters}\n  default: {default}\n  timeZone: UTC\n  \
         windows: [{{name: wed, kind: allow, schedule: \"0 13 * * 3\", duration: 1h}}]\n"
    )
}

async fn put_gate(hub: &Hub, name: &str, yaml: String) {
    let r = hub
        .call(
            Method::PUT,
            &format!("/api/v1/gates/{name}"),
            Some(&hub.admin),
            Some(("application/yaml", yaml)),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

/// The next delivery, verified: its JSON body.
async fn delivered(rx: &mut Received, secret: &str) -> Value {
    let (h, v, raw) = next(rx).await;
    verify(secret, &h, &raw);
    v
}

#[tokio::test]
async fn manifest_writes_announce_the_clusters_whose_state_they_change() {
    let hub = Hub::new().await;
    for (c, env) in [("a", "prod"), ("b", "prod"), ("c", "dev")] {
        hub.register(c, json!({"env": env})).await;
    }
    let (r1, router) = replica(&hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "ops", "url": url, "events": ["gate.opened", "gate.closed"]}),
    )
    .await;
    let _notifier = run_notifier(&r1, &hub);

    // A new gate, closed now, on the prod clusters: they close.
    let prod = "{selector: {matchLabels: {env: prod}}}";
    let r = hub
        .create_gate_yaml(&gate("g", prod, "closed", "first"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "gate.closed", "{v}");
    assert_eq!(v["data"]["cause"], "manifest");
    assert_eq!(v["data"]["clusters"], json!(["a", "b"]));
    assert_eq!(v["data"]["actor"], "bootstrap-admin", "{v}");
    assert!(
        v["data"]["reason"].as_str().unwrap().contains("default"),
        "{v}"
    );
    assert_eq!(
        v["data"]["nextTransition"],
        json!(common::t0() + chrono::Duration::hours(1)),
        "the allow window's start"
    );

    // Only the description changes: no state changes, no event. The
    // selector narrowed to `a`: `b` is no longer held by this gate.
    put_gate(&hub, "g", gate("g", prod, "closed", "second")).await;
    put_gate(&hub, "g", gate("g", "{names: [a]}", "closed", "third")).await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(
        v["type"], "gate.opened",
        "the description-only PUT sent nothing: {v}"
    );
    assert_eq!(v["data"]["clusters"], json!(["b"]));
    assert_eq!(
        v["data"]["reason"],
        "gate 'g' no longer selects this cluster"
    );

    // Default open: `a` opens.
    put_gate(&hub, "g", gate("g", "{names: [a]}", "open", "fourth")).await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(
        (v["type"].as_str(), &v["data"]["clusters"]),
        (Some("gate.opened"), &json!(["a"])),
        "{v}"
    );

    // Back to closed on every cluster, then deleted: every cluster opens.
    put_gate(
        &hub,
        "g",
        gate("g", "{names: [a, b, c]}", "closed", "fifth"),
    )
    .await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["data"]["clusters"], json!(["a", "b", "c"]), "{v}");
    let r = hub
        .call(Method::DELETE, "/api/v1/gates/g", Some(&hub.admin), None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "gate.opened", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["a", "b", "c"]));
    assert_eq!(v["data"]["reason"], "gate 'g' was deleted");

    // Each write made one event per new state: five in all.
    let (n,): (i64,) = sqlx::query_as(
        "select count(*) from notify_events where type in ('gate.opened', 'gate.closed')",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    assert_eq!(n, 5);
}

#[tokio::test]
async fn a_rollout_announces_its_start_waves_halt_and_completion() {
    let f = rollout_support::fleet("", rollout_support::THREE_WAVES).await;
    let (r1, router) = replica(&f.hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "ops", "url": url, "events": ["rollout.*"], "format": "standard"}),
    )
    .await;
    let _notifier = run_notifier(&r1, &f.hub);

    f.complete().await;
    let mut seen = Vec::new();
    while seen.last().map(|v: &Value| v["type"].clone()) != Some(json!("rollout.completed")) {
        seen.push(delivered(&mut rx, &secret).await);
    }
    let kinds: Vec<(String, Value, Value)> = seen
        .iter()
        .map(|v| {
            (
                v["type"].as_str().unwrap().to_string(),
                v["data"]["wave"].clone(),
                v["data"]["clusters"].clone(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("rollout.started".to_string(), json!(1), json!([])),
            ("rollout.wave_released".into(), json!(1), json!(["c1"])),
            (
                "rollout.wave_released".into(),
                json!(2),
                json!(["c2", "c3"])
            ),
            (
                "rollout.wave_released".into(),
                json!(3),
                json!(["c4", "c5", "c6"])
            ),
            ("rollout.completed".into(), json!(4), json!([])),
        ]
    );
    assert!(seen.iter().all(|v| v["subject"] == "rollout/waves"));
    let seqs: Vec<i64> = seen
        .iter()
        .map(|v| v["sequence"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // The next day's rollout: the canary never turns healthy, so it halts.
    f.hub.clock.advance(chrono::Duration::days(1));
    f.at(13, 0);
    f.hub.clock.advance(chrono::Duration::days(1));
    f.step().await;
    // The first rollout ends (its gate closed overnight) before the next starts.
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "rollout.ended", "{v}");
    assert_eq!(v["data"]["rolloutId"], seen[0]["data"]["rolloutId"]);
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "rollout.started", "{v}");
    assert_ne!(v["data"]["rolloutId"], seen[0]["data"]["rolloutId"]);
    assert_eq!(
        delivered(&mut rx, &secret).await["type"],
        "rollout.wave_released"
    );
    f.hub.clock.advance(chrono::Duration::minutes(31));
    f.step().await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "rollout.halted", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["c1"]));
    assert!(
        v["data"]["detail"]
            .as_str()
            .unwrap()
            .contains("wave 1 failed"),
        "{v}"
    );
}

#[tokio::test]
async fn freezes_announce_their_start_and_end() {
    let hub = Hub::new().await;
    for (c, env) in [("a", "prod"), ("b", "prod"), ("c", "dev")] {
        hub.register(c, json!({"env": env})).await;
    }
    let (r1, router) = replica(&hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "incidents", "url": url, "events": ["freeze.*"]}),
    )
    .await;
    let _notifier = run_notifier(&r1, &hub);

    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.admin,
            json!({"reason": "INC-7", "clusters": {"selector": {"matchLabels": {"env": "prod"}}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "freeze.started", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["a", "b"]), "{v}");
    assert_eq!(v["data"]["freeze"]["id"], id.as_str());
    assert_eq!(v["data"]["freeze"]["reason"], "INC-7");
    assert_eq!(v["data"]["freeze"]["actor"], "bootstrap-admin");

    hub.clock.advance(chrono::Duration::minutes(30));
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.admin,
            json!({"reason": "INC-7 fixed"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "freeze.ended", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["a", "b"]), "{v}");
    assert_eq!(v["data"]["freeze"]["id"], id.as_str());
    assert_eq!(v["data"]["freeze"]["endedBy"], "bootstrap-admin");
    assert_eq!(v["data"]["freeze"]["endReason"], "INC-7 fixed");
}

#[tokio::test]
async fn spokes_gone_past_the_grace_period_and_back_are_announced_once() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.register("b", json!({"env": "prod"})).await;
    let (r1, router) = replica(&hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "ops", "url": url, "events": ["spoke.*"]}),
    )
    .await;
    let reports = &r1.reports;
    for c in ["a", "b"] {
        reports.connected(c, "test");
    }
    reports.flush_all().await;
    let grace = Duration::minutes(5);
    let since = t0();
    let other = Service::with_clock(hub.pool.clone(), Arc::new(hub.clock.clone()));
    let scan = |s: &Service| {
        let s = s.clone();
        async move { s.notify_spokes(grace, since).await.unwrap() }
    };

    // `a` leaves at t0+1m; `b` stays (its stream renews liveness).
    hub.clock.set(t0() + Duration::minutes(1));
    reports.disconnected("a", || false);
    reports.flush_all().await;
    hub.clock.set(t0() + Duration::minutes(5));
    reports.connected("b", "test");
    reports.flush_all().await;
    assert_eq!(scan(&hub.service).await, 0, "within the grace period");

    // Past it: both services scan at once, one event.
    hub.clock
        .set(t0() + Duration::minutes(6) + Duration::seconds(1));
    reports.connected("b", "test");
    reports.flush_all().await;
    let (x, y) = tokio::join!(scan(&hub.service), scan(&other));
    assert_eq!(x + y, 1, "exactly one spoke.disconnected");
    assert_eq!(scan(&other).await, 0, "announced once per outage");

    // Back at t0+10m.
    hub.clock.set(t0() + Duration::minutes(10));
    reports.connected("a", "test");
    reports.flush_all().await;
    let (x, y) = tokio::join!(scan(&hub.service), scan(&other));
    assert_eq!(x + y, 1, "exactly one spoke.connected");
    assert_eq!(scan(&hub.service).await, 0);

    let _notifier = run_notifier(&r1, &hub);
    let down = delivered(&mut rx, &secret).await;
    assert_eq!(down["type"], "spoke.disconnected", "{down}");
    assert_eq!(down["subject"], "cluster/a");
    assert_eq!(down["data"]["cluster"], "a");
    assert_eq!(
        down["data"]["lastSeenAt"],
        json!(t0() + Duration::minutes(1))
    );
    let up = delivered(&mut rx, &secret).await;
    assert_eq!(up["type"], "spoke.connected", "{up}");
    assert_eq!(up["data"]["cluster"], "a");
    assert!(up["sequence"].as_i64() > down["sequence"].as_i64());
}

/// A report from `cluster` of one Kustomization held by gate `g` at `revision`
/// (or not held, applied at it).
fn held_report(reports: &Reports, cluster: &str, revision: &str, held: bool) {
    let object = ReportedObject {
        kind: "Kustomization".into(),
        namespace: "flux-system".into(),
        name: "apps".into(),
        suspended: held,
        suspended_by: if held { vec!["g".into()] } else { vec![] },
        gates: vec!["g".into()],
        last_applied_revision: Some(if held { "main@sha1:a" } else { revision }.into()),
        newest_source_revision: Some(revision.into()),
        held,
        ..ReportedObject::default()
    };
    reports.connected(cluster, "test");
    reports.submit(
        cluster,
        1,
        Assembled {
            objects: vec![object],
            held_objects: vec![],
            local_gates: vec![],
            problems: vec![],
            inventory: None,
        },
        0,
    );
}

#[tokio::test]
async fn a_new_revision_waiting_behind_a_closed_gate_is_announced_once() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.simple_gate("g", &["a"], "closed").await;
    let (r1, router) = replica(&hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "ops", "url": url, "events": ["changes.held"]}),
    )
    .await;
    let held = |revision: &'static str, is_held: bool| {
        let r = &r1.reports;
        async move {
            held_report(r, "a", revision, is_held);
            r.flush_all().await;
        }
    };
    held("main@sha1:b", true).await;
    // The same wait reported again (a heartbeat with a changed clock, a
    // reconnect): nothing new.
    hub.clock.advance(Duration::seconds(30));
    held("main@sha1:b", true).await;
    // A newer revision waits: news. Then it is applied, and waits no more.
    held("main@sha1:c", true).await;
    held("main@sha1:c", false).await;

    let _notifier = run_notifier(&r1, &hub);
    for revision in ["main@sha1:b", "main@sha1:c"] {
        let v = delivered(&mut rx, &secret).await;
        assert_eq!(v["type"], "changes.held", "{v}");
        assert_eq!(v["subject"], "cluster/a");
        assert_eq!(v["data"]["gate"], "g");
        assert_eq!(v["data"]["cluster"], "a");
        assert_eq!(
            v["data"]["objects"],
            json!([{"kind": "Kustomization", "namespace": "flux-system", "name": "apps",
                    "revision": revision, "appliedRevision": "main@sha1:a"}])
        );
    }
    let (n,): (i64,) =
        sqlx::query_as("select count(*) from notify_events where type = 'changes.held'")
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    assert_eq!(n, 2);
}

/// The clusters each delivery of subscription `name` names (`None`: all of the event's).
async fn delivered_clusters(hub: &Hub, name: &str) -> Vec<(String, Option<Vec<String>>)> {
    sqlx::query_as(
        "select e.type, d.clusters from webhook_deliveries d \
         join webhooks w on w.id = d.webhook_id join notify_events e on e.id = d.event_id \
         where w.name = $1 order by d.id",
    )
    .bind(name)
    .fetch_all(&hub.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_scoped_subscriber_gets_only_events_of_its_gates_and_clusters() {
    let hub = Hub::new().await;
    for c in ["a", "b"] {
        hub.register(c, json!({"env": "prod"})).await;
    }
    let (_r1, router) = replica(&hub, "r1");
    let r = hub
        .post_json(
            "/api/v1/tokens",
            &hub.admin,
            json!({"name": "team-a", "role": "admin", "scope": {"clusters": {"names": ["a"]}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let team = r.body["secret"].as_str().unwrap().to_string();
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(&router, &team, json!({"name": "team", "url": url})).await;
    subscribe(&router, common::ADMIN, json!({"name": "all", "url": url})).await;

    // A gate on both clusters: the team hears about `a` only.
    hub.simple_gate("both", &["a", "b"], "closed").await;
    // A gate on `b` alone, and `b`'s spoke events: nothing for the team.
    hub.simple_gate("only-b", &["b"], "closed").await;
    let mut tx = hub.pool.begin().await.unwrap();
    for c in ["a", "b"] {
        fleetgate_hub::notify::enqueue(
            &mut tx,
            &fleetgate_hub::notify::NewEvent {
                event_type: "spoke.disconnected".into(),
                subject: format!("cluster/{c}"),
                dedup_key: None,
                occurred_at: t0(),
                gate: None,
                clusters: vec![c.into()],
                data: json!({"cluster": c}),
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();

    let a = Some(vec!["a".to_string()]);
    assert_eq!(
        delivered_clusters(&hub, "team").await,
        [
            ("gate.closed".to_string(), a.clone()),
            ("spoke.disconnected".to_string(), a.clone()),
        ]
    );
    let all: Vec<String> = delivered_clusters(&hub, "all")
        .await
        .into_iter()
        .map(|(t, c)| {
            assert_eq!(c, None, "unscoped: every cluster");
            t
        })
        .collect();
    assert_eq!(
        all,
        [
            "gate.closed",
            "gate.closed",
            "spoke.disconnected",
            "spoke.disconnected"
        ]
    );

    // What the team's receiver gets names `a` only.
    let (r1, _) = replica(&hub, "r2");
    let _notifier = run_notifier(&r1, &hub);
    let mut team_gate = None;
    while team_gate.is_none() {
        let (h, v, raw) = next(&mut rx).await;
        if standardwebhooks::Webhook::new(&secret)
            .unwrap()
            .verify(&raw, &h)
            .is_ok()
            && v["type"] == "gate.closed"
        {
            team_gate = Some(v);
        }
    }
    let v = team_gate.unwrap();
    assert_eq!(v["data"]["gate"], "both");
    assert_eq!(v["data"]["clusters"], json!(["a"]), "{v}");
}
