//! Waves release in order with soak: only after a fresh healthy report and the soak,
//! from the first wave again at the next opening; members are listed in release order
//! (`sortLabel`), and each cluster's status names its wave, health and release time.

use axum::http::{Method, StatusCode};
use chrono::{TimeZone, Utc};
use serde_json::json;

use crate::common;
use crate::rollout_support::{THREE_WAVES, fleet};

#[tokio::test]
async fn waves_release_in_order_with_soak() {
    let f = fleet("", THREE_WAVES).await;
    assert!(f.step().await.is_empty(), "closed gate: no rollout");
    let r = f.hub.get("/api/v1/gates/waves/rollout").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    f.at(13, 0);
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    let opening = Utc.with_ymd_and_hms(2026, 11, 25, 13, 0, 0).unwrap();
    assert_eq!(f.release("c1").await, Some((0, opening)));
    assert_eq!(f.released().await, ["c1"]);
    let s = f.status().await;
    assert_eq!(s["state"], "running");
    assert_eq!(s["waves"][0]["state"], "released");
    assert_eq!(s["waves"][1]["clusters"][0]["name"], "c2");
    assert_eq!(s["waves"][1]["clusters"][1]["name"], "c3");
    assert_eq!(s["waves"][2]["clusters"].as_array().unwrap().len(), 3);
    // Every surface shows what the spokes enforce: c1 open, c2 waiting for its wave.
    assert_eq!(
        f.gate_state("c1").await,
        ("open".into(), "allow window 'day' until 17:00 UTC".into())
    );
    assert_eq!(
        f.gate_state("c2").await,
        ("closed".into(), "waiting for rollout wave 2".into())
    );

    // A report from before the release never passes the wave: c1 is still progressing.
    f.advance(1);
    assert!(f.step().await.is_empty());
    f.report(&["c1"], false).await;
    assert!(f.step().await.is_empty());
    assert_eq!(
        f.status().await["waves"][0]["clusters"][0]["health"],
        "progressing"
    );

    f.report(&["c1"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    let s = f.status().await;
    assert_eq!(s["waves"][0]["state"], "soaking");
    assert_eq!(s["soakUntil"], "2026-11-25T13:11:00Z");
    f.advance(9);
    assert!(f.step().await.is_empty(), "soak not over");
    assert_eq!(f.released().await, ["c1"]);
    f.advance(1);
    assert_eq!(f.step().await, ["rollout.release"]);
    assert_eq!(f.released().await, ["c1", "c2", "c3"]);
    assert_eq!(f.release("c2").await, Some((1, opening)));

    f.report(&["c2", "c3"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    f.advance(10);
    assert_eq!(f.step().await, ["rollout.release"]);
    f.report(&["c4", "c5", "c6"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    f.advance(10);
    assert_eq!(f.step().await, ["rollout.complete"]);
    assert_eq!(f.status().await["state"], "completed");
    assert_eq!(f.released().await.len(), 6);
    assert_eq!(f.audit("rollout.release").await, 3);

    // The window closes: the rollout ends, every release leaves the snapshots at once.
    f.at(17, 0);
    assert_eq!(f.step().await, ["rollout.end"]);
    assert!(f.released().await.is_empty());
    // The next day's opening starts from the first wave again.
    f.hub
        .clock
        .set(Utc.with_ymd_and_hms(2026, 11, 26, 13, 0, 0).unwrap());
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn the_cluster_status_names_its_place_in_the_rollout() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    let rollout_of = |c: &'static str| {
        let hub = &f.hub;
        async move {
            let r = hub.get(&format!("/api/v1/clusters/{c}/status")).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            r.body["gates"][0]["rollout"].clone()
        }
    };
    let c2 = rollout_of("c2").await;
    assert_eq!(c2["wave"], 2, "{c2}");
    assert_eq!(c2["waveName"], "early");
    assert_eq!(c2["health"], "closed");
    assert!(c2["releasedAt"].is_null());
    // Released; its spoke has not connected yet: unknown, never healthy.
    let c1 = rollout_of("c1").await;
    assert_eq!(
        (c1["wave"].clone(), c1["health"].clone()),
        (json!(1), json!("unknown"))
    );
    assert_eq!(c1["releasedAt"], "2026-11-25T13:00:00Z");
    f.report(&["c1"], true).await;
    f.step().await;
    assert_eq!(rollout_of("c1").await["health"], "healthy");
    // The window closes: the rollout ends, no place is shown.
    f.at(17, 0);
    f.step().await;
    assert!(rollout_of("c1").await.is_null());
}

#[tokio::test]
async fn wave_members_are_listed_in_release_order() {
    // sortLabel `order` reverses the names: c6 is released first, c1 last.
    let f = fleet(
        "    sortLabel: order\n",
        "      - {name: canary, count: 1}\n      - {name: rest}\n",
    )
    .await;
    for i in 1..=6 {
        let r = f
            .hub
            .call(
                Method::PUT,
                &format!("/api/v1/clusters/c{i}/labels"),
                Some(common::ADMIN),
                Some((
                    "application/json",
                    json!({"labels": {"env": "prod", "order": (7 - i).to_string()}}).to_string(),
                )),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    }
    f.at(13, 0);
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    let s = f.status().await;
    let names = |w: usize| -> Vec<String> {
        s["waves"][w]["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(0), ["c6"]);
    assert_eq!(names(1), ["c5", "c4", "c3", "c2", "c1"], "{s}");
}
