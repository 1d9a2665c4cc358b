//! What the demo waits for before it shows itself ready: every spoke enforcing
//! (closed suspend-mode gates applied and reported), then held changes.

use std::time::{Duration, Instant};

use fleetgate_api_types::{ClusterStatus, GateRecord};
use fleetgate_policy::Mode;
use tokio_util::sync::CancellationToken;

use crate::error::other;
use crate::fleet;
use fleetgate::client::{Client, seg};
use fleetgate::error::Result;

/// Waits (bounded) until every spoke is connected and has reported that it
/// enforces: every object a closed `suspend`-mode gate governs is suspended.
/// Only then are revisions pushed, so they are held rather than applied.
pub(crate) async fn wait_reported(
    client: &Client,
    clusters: &[fleet::DemoCluster],
    shutdown: &CancellationToken,
) -> Result<()> {
    let suspend_mode: Vec<String> = client
        .list::<GateRecord>("/gates", &[], None)
        .await?
        .into_iter()
        .filter(suspends_objects)
        .map(|g| g.name)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut pending: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for name in pending {
            let st: ClusterStatus = client
                .get(&format!("/clusters/{}/status", seg(name)), &[])
                .await?;
            if !enforced(&st, &suspend_mode) {
                still.push(name);
            }
        }
        pending = still;
        if pending.is_empty() {
            break;
        }
        if shutdown.is_cancelled() {
            return Err(other("interrupted", "while waiting for the spokes"));
        }
        if Instant::now() > deadline {
            return Err(other(
                "spokes",
                format!("not enforcing within 120 s: {pending:?}"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(())
}

/// Whether a closed `gate` suspends the objects it governs, which the
/// cluster status then shows (`freezeSources` suspends their sources instead).
fn suspends_objects(gate: &GateRecord) -> bool {
    fleetgate_policy::parse_gate_json(gate.manifest.clone())
        .is_ok_and(|g| g.spec.mode != Mode::FreezeSources)
}

/// A cluster status shows a connected spoke that reported objects, and
/// every object governed by a closed gate of `suspend_mode` is suspended.
fn enforced(st: &ClusterStatus, suspend_mode: &[String]) -> bool {
    let closed: Vec<&str> = st
        .gates
        .iter()
        .filter(|g| g.state == "closed")
        .map(|g| g.gate.as_str())
        .filter(|g| suspend_mode.iter().any(|m| m == g))
        .collect();
    st.cluster.connected
        && !st.objects.is_empty()
        && st.objects.iter().all(|o| {
            let held_by_closed = o.object.gates.iter().any(|g| closed.contains(&g.as_str()));
            !held_by_closed || o.object.suspended
        })
}

/// Waits (bounded, soft: 60 s) until every cluster's spoke has reported the revision pushed
/// to it ([`fleet::revision`] `(cluster, 1)`): some object has it as its newest source
/// revision, and each such object applied it or is held. Then the hub's held counts are what
/// the banner prints, not a moment early.
pub(crate) async fn wait_held(
    client: &Client,
    clusters: &[fleet::DemoCluster],
    shutdown: &CancellationToken,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut pending: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
    while !pending.is_empty() && Instant::now() < deadline && !shutdown.is_cancelled() {
        let mut still = Vec::new();
        for name in pending {
            let st: ClusterStatus = client
                .get(&format!("/clusters/{}/status", seg(name)), &[])
                .await?;
            if !settled(&st, &fleet::revision(name, 1)) {
                still.push(name);
            }
        }
        pending = still;
        if !pending.is_empty() {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(())
}

/// Some object of `st` reports `revision` as its source's newest, and every such object
/// applied it or is held; or the pushed source, `flux-system`, is suspended (a closed gate
/// without `targets` suspends sources too), so the push cannot show before it opens.
fn settled(st: &ClusterStatus, revision: &str) -> bool {
    let source_suspended = st.objects.iter().any(|o| {
        o.object.kind == "GitRepository" && o.object.name == "flux-system" && o.object.suspended
    });
    let mut with = st
        .objects
        .iter()
        .filter(|o| o.object.newest_source_revision.as_deref() == Some(revision))
        .peekable();
    let reported = with.peek().is_some();
    source_suspended
        || reported
            && with.all(|o| {
                o.object.held || o.object.last_applied_revision.as_deref() == Some(revision)
            })
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// A cluster status as the hub serves it, with `gates` and `objects`.
    fn status_json(connected: bool, gates: Value, objects: Value) -> ClusterStatus {
        let at = "2026-11-24T10:00:00Z";
        let objects: Vec<Value> = objects
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let mut full = json!({
                    "kind": "Kustomization", "namespace": "flux-system",
                    "suspendedBy": [], "lastAppliedRevision": null, "newestSourceRevision": null,
                    "held": false, "suspendedByHuman": false, "ignored": false,
                    "reportedAt": at,
                });
                full.as_object_mut()
                    .unwrap()
                    .extend(o.as_object().unwrap().clone());
                full
            })
            .collect();
        let gates: Vec<Value> = gates
            .as_array()
            .unwrap()
            .iter()
            .map(|g| {
                let mut full = json!({"reason": "", "nextTransition": null, "objects": [],
                    "held": 0, "heldObjects": 0});
                full.as_object_mut()
                    .unwrap()
                    .extend(g.as_object().unwrap().clone());
                full
            })
            .collect();
        serde_json::from_value(json!({
            "cluster": {"name": "prod-eu-1", "labels": {}, "createdAt": at, "lastSeenAt": null,
                "spokeVersion": null, "connected": connected, "connectedReplica": null,
                "clockOffsetMs": null, "desiredRevision": 1},
            "at": at, "open": false, "closedBy": [], "nextTransition": null,
            "gates": gates, "objects": objects, "heldObjects": [],
            "counts": {"governed": 0, "held": 0, "suspended": 0, "heldObjects": 0,
                "heldObjectsByPerson": 0, "heldObjectsWaiting": 0},
        }))
        .expect("a cluster status")
    }

    fn status(connected: bool, suspended: bool) -> ClusterStatus {
        status_json(
            connected,
            json!([
                {"gate": "sre-approval", "state": "closed"},
                {"gate": "release-train", "state": "closed"},
                {"gate": "weekdays", "state": "open"}
            ]),
            json!([
                {"name": "payments-api", "gates": ["sre-approval"], "suspended": suspended},
                {"name": "shop", "gates": ["release-train"], "suspended": false},
                {"name": "web", "gates": ["weekdays"], "suspended": false}
            ]),
        )
    }

    #[test]
    fn settled_means_the_pushed_revision_is_reported_and_applied_or_held() {
        let st = |objects: Value| status_json(true, json!([]), objects);
        let r = "main@sha1:2";
        let applied = json!({"name": "a", "gates": [], "suspended": false,
            "newestSourceRevision": r, "lastAppliedRevision": r});
        let held = json!({"name": "b", "gates": ["g"], "suspended": true, "held": true,
            "newestSourceRevision": r, "lastAppliedRevision": "main@sha1:1"});
        let waiting = json!({"name": "c", "gates": [], "suspended": false,
            "newestSourceRevision": r, "lastAppliedRevision": "main@sha1:1"});
        let before = json!({"name": "d", "gates": [], "suspended": false,
            "newestSourceRevision": "main@sha1:1", "lastAppliedRevision": "main@sha1:1"});
        assert!(settled(&st(json!([applied, held, before])), r));
        assert!(
            !settled(&st(json!([applied, waiting])), r),
            "c not applied yet"
        );
        assert!(
            !settled(&st(json!([before])), r),
            "the push not reported yet"
        );
        let source = json!({"kind": "GitRepository", "name": "flux-system", "gates": ["g"],
            "suspended": true, "suspendedBy": ["g"]});
        assert!(
            settled(&st(json!([before, source])), r),
            "its source is suspended"
        );
    }

    #[test]
    fn enforced_means_connected_and_closed_suspend_gates_applied() {
        let modes = vec!["sre-approval".to_string(), "weekdays".to_string()];
        assert!(enforced(&status(true, true), &modes));
        assert!(
            !enforced(&status(true, false), &modes),
            "payments-api not yet suspended"
        );
        assert!(
            !enforced(&status(false, true), &modes),
            "spoke not connected"
        );
        let no_objects = status_json(true, json!([]), json!([]));
        assert!(!enforced(&no_objects, &modes), "nothing reported yet");
    }
}
