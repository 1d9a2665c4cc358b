//! Where `gate.opened` / `gate.closed` come from, and that each change is
//! one event however many writers and scanners see it (on the injected
//! clock, two services over one database scanning at once):
//! - an in-cluster request (as its spoke reports it) has cause
//!   `inClusterRequest`, at the request's instant, also when it ends;
//! - so has a freeze made in a cluster (its spoke reports it, maybe after
//!   the scans passed its start), when it starts, is lifted there or expires;
//! - an override's write and the scans passing its instant make one event
//!   (keyed by gate, instant and state), whose next transition is the override's end;
//! - a rollout gate opens per wave (cause `rollout`, the wave's clusters),
//!   not at its window's edge; `rollout.ended` and `rollout.aborted`.

mod common;
mod rollout_support;

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use common::{Hub, t0};
use fleetgate_hub::Service;
use fleetgate_hub::service::freezes::LocalFreeze;
use fleetgate_hub::service::local_gates::requests::LocalRequest;
use fleetgate_policy::GateState;
use serde_json::{Value, json};

const LEADS: &[Duration] = &[];

/// Every event in the outbox, oldest first: (type, data).
async fn events(hub: &Hub) -> Vec<(String, Value)> {
    sqlx::query_as("select type, data from notify_events order by id")
        .fetch_all(&hub.pool)
        .await
        .unwrap()
}

/// The outbox's `gate.opened`/`gate.closed`: (type, clusters, cause, at).
async fn transitions(hub: &Hub) -> Vec<(String, Value, Value, Value)> {
    events(hub)
        .await
        .into_iter()
        .filter(|(t, _)| t.starts_with("gate.") && t != "gate.upcoming")
        .map(|(t, d)| {
            (
                t,
                d["clusters"].clone(),
                d["cause"].clone(),
                d["at"].clone(),
            )
        })
        .collect()
}

/// Scans with the hub's service and a second one on the same database
/// and clock, at once (two replicas waking together).
async fn scan_twice(hub: &Hub) {
    let other = Service::with_clock(hub.pool.clone(), Arc::new(hub.clock.clone()));
    let (a, b) = tokio::join!(hub.service.notify_scan(LEADS), other.notify_scan(LEADS));
    a.unwrap();
    b.unwrap();
}

fn request(state: GateState, at: DateTime<Utc>) -> LocalRequest {
    LocalRequest {
        gate: "release".into(),
        state,
        requested_at: at,
        expires_at: at + Duration::hours(1),
        reason: "incident 7".into(),
        requested_by: "alice".into(),
    }
}

#[tokio::test]
async fn in_cluster_requests_are_announced_once_with_their_cause() {
    let hub = Hub::new().await;
    hub.register("c1", json!({})).await;
    hub.register("c2", json!({})).await;
    hub.simple_gate("release", &["c1", "c2"], "open").await;
    hub.service.notify_scan(LEADS).await.unwrap(); // the scheduler starts at t0

    // Reported after the scans passed its instant: the write announces it.
    hub.clock.set(t0() + Duration::minutes(2));
    scan_twice(&hub).await;
    let at1 = t0() + Duration::minutes(1);
    let rec = hub
        .service
        .record_local_request("c1", request(GateState::Closed, at1))
        .await
        .unwrap()
        .expect("recorded");
    // Reported before any scan passed it: the write and both scans see it.
    hub.clock.set(t0() + Duration::minutes(4));
    let at2 = t0() + Duration::minutes(3);
    hub.service
        .record_local_request("c2", request(GateState::Closed, at2))
        .await
        .unwrap()
        .expect("recorded");
    scan_twice(&hub).await;
    assert_eq!(
        transitions(&hub).await,
        [
            (
                "gate.closed".to_string(),
                json!(["c1"]),
                json!("inClusterRequest"),
                json!(at1)
            ),
            (
                "gate.closed".to_string(),
                json!(["c2"]),
                json!("inClusterRequest"),
                json!(at2)
            ),
        ],
        "one event per request, at its instant"
    );
    let all = events(&hub).await;
    let closed = all.iter().find(|(t, _)| t == "gate.closed").unwrap();
    assert_eq!(closed.1["actor"], "alice@cluster/c1");
    let created = all
        .iter()
        .filter(|(t, d)| t == "override.created" && d["clusters"] == json!(["c1"]))
        .count();
    assert_eq!(created, 1, "{all:?}");

    // The first request runs out: the scan reopens c1, still its cause.
    hub.clock
        .set(at1 + Duration::hours(1) + Duration::seconds(1));
    scan_twice(&hub).await;
    let t = transitions(&hub).await;
    assert_eq!(
        t[2],
        (
            "gate.opened".to_string(),
            json!(["c1"]),
            json!("inClusterRequest"),
            json!(at1 + Duration::hours(1))
        )
    );
    assert_eq!(t.len(), 3, "{t:?}");
    let ended: Vec<_> = events(&hub)
        .await
        .into_iter()
        .filter(|(t, _)| t == "override.ended")
        .collect();
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].1["override"]["id"], json!(rec.id));
}

#[tokio::test]
async fn in_cluster_freezes_are_announced_once_with_their_cause() {
    let hub = Hub::new().await;
    hub.register("c1", json!({})).await;
    hub.register("c2", json!({})).await;
    hub.simple_gate("release", &["c1", "c2"], "open").await;
    hub.service.notify_scan(LEADS).await.unwrap(); // the scheduler starts at t0
    let freeze = |at: DateTime<Utc>, expires_at| LocalFreeze {
        requested_at: at,
        expires_at,
        reason: "incident *7*".into(),
        requested_by: "alice".into(),
    };

    // Frozen in c1 at t0+1m, reported after the scans passed that instant
    // (the hub was unreachable): the write announces it, at its start.
    hub.clock.set(t0() + Duration::minutes(2));
    scan_twice(&hub).await;
    let at1 = t0() + Duration::minutes(1);
    hub.service
        .record_local_freeze("c1", Some(freeze(at1, None)))
        .await
        .unwrap()
        .expect("recorded");
    scan_twice(&hub).await;
    // Lifted in c1 (ConfigMap deleted), reported at t0+5m; the scans add nothing.
    let at2 = t0() + Duration::minutes(5);
    hub.clock.set(at2);
    hub.service
        .record_local_freeze("c1", None)
        .await
        .unwrap()
        .expect("ended");
    hub.clock.set(at2 + Duration::seconds(30));
    scan_twice(&hub).await;
    // Frozen in c2 until t0+10m: its expiry is the scheduler's, same cause.
    let at3 = t0() + Duration::minutes(6);
    let until = t0() + Duration::minutes(10);
    hub.clock.set(at3);
    hub.service
        .record_local_freeze("c2", Some(freeze(at3, Some(until))))
        .await
        .unwrap()
        .expect("recorded");
    hub.clock.set(until + Duration::seconds(1));
    scan_twice(&hub).await;
    let t = |ty: &str, c: &str, at: DateTime<Utc>| {
        (
            ty.to_string(),
            json!([c]),
            json!("inClusterRequest"),
            json!(at),
        )
    };
    assert_eq!(
        transitions(&hub).await,
        [
            t("gate.closed", "c1", at1),
            t("gate.opened", "c1", at2),
            t("gate.closed", "c2", at3),
            t("gate.opened", "c2", until),
        ],
        "one event per start and end, at its instant"
    );
    let all = events(&hub).await;
    let closed = all.iter().find(|(t, _)| t == "gate.closed").unwrap();
    assert_eq!(closed.1["actor"], "alice@cluster/c1");
    assert!(
        closed.1["reason"].as_str().unwrap().contains("freeze"),
        "{closed:?}"
    );
}

#[tokio::test]
async fn an_override_write_and_the_scans_of_its_instant_make_one_event() {
    let hub = Hub::new().await;
    hub.register("a", json!({})).await;
    hub.register("b", json!({})).await;
    hub.simple_gate("g", &["a", "b"], "closed").await; // gate.closed, cause manifest
    hub.service.notify_scan(LEADS).await.unwrap();

    // Opened now: the write announces it; both scans pass the same instant.
    let t1 = t0() + Duration::minutes(1);
    hub.clock.set(t1);
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "30m", "reason": "hotfix"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    hub.clock.set(t1 + Duration::seconds(30));
    scan_twice(&hub).await;
    // Cancelled: the write again, then the scans.
    let t2 = t1 + Duration::minutes(1);
    hub.clock.set(t2);
    let r = hub
        .call(
            axum::http::Method::DELETE,
            &format!("/api/v1/overrides/{id}"),
            Some(&hub.operator),
            None,
        )
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    hub.clock.set(t2 + Duration::seconds(30));
    scan_twice(&hub).await;
    // Scheduled ahead: no write announces it, the scans do, once.
    let t3 = t0() + Duration::minutes(10);
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "5m", "reason": "window", "startsAt": t3}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    hub.clock.set(t3 + Duration::seconds(1));
    scan_twice(&hub).await;
    hub.clock.set(t3 + Duration::minutes(6));
    scan_twice(&hub).await;

    let both = json!(["a", "b"]);
    let want =
        |t: &str, at: DateTime<Utc>| (t.to_string(), both.clone(), json!("override"), json!(at));
    assert_eq!(
        transitions(&hub).await[1..],
        [
            want("gate.opened", t1),
            want("gate.closed", t2),
            want("gate.opened", t3),
            want("gate.closed", t3 + Duration::minutes(5)),
        ]
    );
    let kinds: Vec<String> = events(&hub)
        .await
        .into_iter()
        .map(|(t, _)| t)
        .filter(|t| t.starts_with("override."))
        .collect();
    assert_eq!(
        kinds,
        [
            "override.created",
            "override.ended",
            "override.created",
            "override.ended"
        ]
    );
}

/// One scan passing the edges of overrides that apply to different clusters: the gate's
/// changes are worked out once per set of applying overrides (not per cluster), and each
/// cluster still gets the edges of its own set.
#[tokio::test]
async fn one_scan_gives_each_cluster_the_edges_of_its_own_overrides() {
    let hub = Hub::new().await;
    for c in ["a", "b", "c", "d"] {
        hub.register(c, json!({})).await;
    }
    hub.simple_gate("g", &["a", "b", "c", "d"], "closed").await;
    hub.service.notify_scan(LEADS).await.unwrap();

    // Scheduled ahead, so no write announces them: a and b open at t1 for 5 minutes, c at
    // t2 for 10, d not at all.
    let (t1, t2) = (t0() + Duration::minutes(10), t0() + Duration::minutes(12));
    for (clusters, at, minutes) in [(json!(["a", "b"]), t1, 5), (json!(["c"]), t2, 10)] {
        let r = hub
            .post_json(
                "/api/v1/gates/g/open",
                &hub.operator,
                json!({"for": format!("{minutes}m"), "reason": "window", "startsAt": at,
                       "clusters": {"names": clusters}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    hub.clock.set(t2 + Duration::minutes(11));
    hub.service.notify_scan(LEADS).await.unwrap();

    let want = |t: &str, clusters: Value, at: DateTime<Utc>| {
        (t.to_string(), clusters, json!("override"), json!(at))
    };
    let mut got = transitions(&hub).await[1..].to_vec();
    got.sort_by(|x, y| (x.3.as_str(), &x.0).cmp(&(y.3.as_str(), &y.0)));
    assert_eq!(
        got,
        [
            want("gate.opened", json!(["a", "b"]), t1),
            want("gate.opened", json!(["c"]), t2),
            want("gate.closed", json!(["a", "b"]), t1 + Duration::minutes(5)),
            want("gate.closed", json!(["c"]), t2 + Duration::minutes(10)),
        ]
    );
}

#[tokio::test]
async fn a_gate_closed_for_an_hour_announces_the_override_s_end_as_its_next_change() {
    let hub = Hub::new().await;
    hub.register("a", json!({})).await;
    hub.simple_gate("g", &["a"], "open").await;
    hub.service.notify_scan(LEADS).await.unwrap();
    // Closed now for an hour, by the write; then one scheduled ahead, by the scans.
    let r = hub
        .post_json(
            "/api/v1/gates/g/close",
            &hub.operator,
            json!({"for": "1h", "reason": "incident"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    let t1 = t0() + Duration::hours(2);
    let r = hub
        .post_json(
            "/api/v1/gates/g/close",
            &hub.operator,
            json!({"for": "30m", "reason": "change", "startsAt": t1}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);
    hub.clock.set(t1 + Duration::seconds(1));
    scan_twice(&hub).await;
    let closed: Vec<(Value, Value)> = events(&hub)
        .await
        .into_iter()
        .filter(|(t, _)| t == "gate.closed")
        .map(|(_, d)| (d["at"].clone(), d["nextTransition"].clone()))
        .collect();
    assert_eq!(
        closed,
        [
            (json!(t0()), json!(t0() + Duration::hours(1))),
            (json!(t1), json!(t1 + Duration::minutes(30))),
        ],
        "each closing names the override's end as the next change"
    );
}

#[tokio::test]
async fn a_rollout_gate_opens_wave_by_wave_and_its_rollout_ends_or_aborts() {
    let f = rollout_support::fleet("", rollout_support::THREE_WAVES).await;
    let hub = &f.hub;
    hub.service.notify_scan(LEADS).await.unwrap();
    // The window opens at 13:00; the scans pass it, the driver releases wave by wave.
    f.at(13, 0);
    scan_twice(hub).await;
    f.complete().await;
    scan_twice(hub).await;
    let opened: Vec<(Value, Value, Value)> = events(hub)
        .await
        .into_iter()
        .filter(|(t, _)| t == "gate.opened")
        .map(|(_, d)| {
            (
                d["clusters"].clone(),
                d["cause"].clone(),
                d["reason"].clone(),
            )
        })
        .collect();
    assert_eq!(
        opened,
        [
            (
                json!(["c1"]),
                json!("rollout"),
                json!("released by rollout wave 1")
            ),
            (
                json!(["c2", "c3"]),
                json!("rollout"),
                json!("released by rollout wave 2")
            ),
            (
                json!(["c4", "c5", "c6"]),
                json!("rollout"),
                json!("released by rollout wave 3")
            ),
        ],
        "one gate.opened per wave, none at the window's edge"
    );
    let first = events(hub)
        .await
        .into_iter()
        .find(|(t, _)| t == "gate.opened")
        .unwrap()
        .1;
    assert_eq!(
        first["nextTransition"],
        json!("2026-11-25T17:00:00Z"),
        "{first}"
    );

    // 17:00: the window closes every cluster, and the rollout ends.
    f.at(17, 0);
    scan_twice(hub).await;
    assert!(f.step().await.contains(&"rollout.end".to_string()));
    let all = events(hub).await;
    let closed: Vec<&Value> = all
        .iter()
        .filter(|(t, d)| t == "gate.closed" && d["cause"] == "window")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(closed.len(), 1);
    assert_eq!(
        closed[0]["clusters"],
        json!(["c1", "c2", "c3", "c4", "c5", "c6"])
    );
    assert_eq!(closed[0]["cause"], "window");
    let ended = all
        .iter()
        .find(|(t, _)| t == "rollout.ended")
        .expect("rollout.ended");
    assert_eq!(ended.1["detail"], "the gate closed");

    // The next day's rollout, aborted by an operator after its canary.
    hub.clock.advance(Duration::days(1));
    f.at(13, 0);
    hub.clock.advance(Duration::days(1));
    f.step().await;
    let r = f.command("abort").await;
    assert!(r.status.is_success(), "{}", r.text);
    let all = events(hub).await;
    let aborted: Vec<&Value> = all
        .iter()
        .filter(|(t, _)| t == "rollout.aborted")
        .map(|(_, d)| d)
        .collect();
    assert_eq!(aborted.len(), 1, "{all:?}");
    assert_eq!(aborted[0]["wave"], 1);
    assert_eq!(
        all.iter()
            .filter(|(t, d)| t == "gate.opened" && d["clusters"] == json!(["c1"]))
            .count(),
        2,
        "the second day's canary opened too"
    );
}
