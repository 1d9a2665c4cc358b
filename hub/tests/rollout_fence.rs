//! A closed interval the driver never saw still stages the reopening (issue 15's safety
//! bug): a gate-wide freeze created and cancelled between two driver steps, or one that
//! expires while no driver runs, ends the finished rollout's releases at once (the
//! snapshots stop carrying them, before any step) and the next step starts a new rollout
//! that releases the canary wave only. A deny window that passes while no driver runs
//! does the same (the window history is the gate's own). A cluster-scoped freeze is not
//! staged again: its clusters reopen with their release moved to their new open period.
//! A cluster joining after every wave was released gets a late wave, judged and soaked.
//! Real PostgreSQL, the injected clock; the driver steps only when a test says so.

mod common;
mod rollout_support;

use chrono::{TimeZone, Utc};
use rollout_support::{THREE_WAVES, fleet, gate};
use serde_json::json;

fn at(h: u32, m: u32) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 25, h, m, 0).unwrap()
}

#[tokio::test]
async fn a_freeze_cancelled_between_two_steps_stages_the_reopening() {
    let f = fleet("", THREE_WAVES).await;
    f.complete().await;
    // 13:30: a freeze, cancelled a minute later; the driver does not step in between.
    let id = f
        .override_("close", json!({"for": "1h", "reason": "freeze"}))
        .await;
    assert!(
        f.released().await.len() == 6,
        "closing is the spoke's own evaluation"
    );
    f.advance(1);
    f.cancel(&id).await;
    // Before any step: no snapshot carries a release valid for the new opening.
    assert!(
        f.released().await.is_empty(),
        "a release from before the freeze opens nothing after it"
    );
    assert_eq!(f.gate_state("c4").await.0, "closed");
    // The next step ends the completed rollout and stages the reopening from the canary.
    assert_eq!(
        f.step().await,
        ["rollout.end", "rollout.start", "rollout.release"]
    );
    assert_eq!(f.released().await, ["c1"]);
    assert_eq!(f.release("c1").await, Some((0, at(13, 31))));
    let s = f.status().await;
    assert_eq!(s["state"], "running");
    assert_eq!(s["openingAt"], "2026-11-25T13:31:00Z");
    // Stable: the following steps keep that opening.
    f.advance(1);
    assert!(f.step().await.is_empty());
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn a_freeze_expiring_while_no_driver_runs_stages_the_reopening() {
    let f = fleet("", THREE_WAVES).await;
    f.complete().await;
    f.override_("close", json!({"for": "5m", "reason": "freeze"}))
        .await;
    // Every replica is down from here until 13:45; the freeze expired at 13:35.
    f.advance(15);
    assert!(f.released().await.is_empty());
    assert_eq!(
        f.step().await,
        ["rollout.end", "rollout.start", "rollout.release"]
    );
    assert_eq!(f.released().await, ["c1"]);
    assert_eq!(f.release("c1").await, Some((0, at(13, 35))));
    // A freeze that never took effect (cancelled before its start) leaves no fence.
    let id = f
        .override_(
            "close",
            json!({"startsAt": "2026-11-25T14:00:00Z", "for": "1h", "reason": "later"}),
        )
        .await;
    f.cancel(&id).await;
    assert!(f.step().await.is_empty());
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn a_deny_window_passing_while_no_driver_runs_stages_the_reopening() {
    let yaml = gate("", THREE_WAVES).replace(
        "windows: [{name: day, kind: allow, schedule: \"0 13 * * *\", duration: 4h}]",
        "windows: [{name: day, kind: allow, schedule: \"0 13 * * *\", duration: 4h},\n            {name: lunch, kind: deny, schedule: \"40 13 * * *\", duration: 10m}]",
    );
    let f = rollout_support::fleet_with_gate(&yaml).await;
    f.complete().await;
    // 13:55: the deny window 13:40–13:50 came and went without a step.
    f.advance(25);
    assert_eq!(
        f.step().await,
        ["rollout.end", "rollout.start", "rollout.release"]
    );
    assert_eq!(f.released().await, ["c1"]);
    assert_eq!(f.release("c1").await, Some((0, at(13, 50))));
}

#[tokio::test]
async fn a_cluster_scoped_freeze_reopens_its_clusters_without_staging() {
    let f = fleet("", THREE_WAVES).await;
    f.complete().await;
    let id = f
        .override_(
            "close",
            json!({"for": "1h", "reason": "c5 incident", "clusters": {"names": ["c5"]}}),
        )
        .await;
    f.advance(1);
    f.cancel(&id).await;
    // Until the driver moves c5's release to its new open period, c5 stays closed.
    assert_eq!(f.released().await, ["c1", "c2", "c3", "c4", "c6"]);
    assert_eq!(f.step().await, ["rollout.update"]);
    assert_eq!(f.released().await.len(), 6);
    assert_eq!(f.release("c5").await, Some((2, at(13, 31))));
    assert_eq!(f.release("c4").await, Some((2, at(13, 0))));
    assert_eq!(f.status().await["state"], "completed");
}

#[tokio::test]
async fn a_cluster_joining_after_every_wave_started_gets_a_late_wave() {
    let f = fleet("", THREE_WAVES).await;
    f.complete().await;
    // c7 comes into scope after the last wave: a late wave, released at once (the wave
    // before it soaked already), then judged and soaked like any other.
    f.hub.register("c7", json!({"env": "prod"})).await;
    assert_eq!(f.step().await, ["rollout.join", "rollout.release"]);
    let s = f.status().await;
    assert_eq!(s["state"], "running", "{s}");
    assert_eq!(s["waves"][3]["clusters"][0]["name"], "c7", "{s}");
    assert_eq!(s["waves"][3]["clusters"][0]["late"], true, "{s}");
    let c7 = f.hub.service.cluster_snapshot("c7").await.unwrap();
    let release = c7.gates[0].release.as_ref().expect("c7 released");
    assert_eq!((release.wave, release.opening_at), (3, at(13, 0)));
    common::report_apps(&f.replica.reports, &["c7"], "waves", true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    f.advance(10);
    assert_eq!(f.step().await, ["rollout.complete"]);
    assert_eq!(f.audit("rollout.join").await, 1);
}
