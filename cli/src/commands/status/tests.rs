//! Rendering of `fleetgate status` from hub answers.

use serde_json::json;

use super::*;
use crate::commands::fixtures::{cluster, cluster_status, counts};

#[test]
fn cluster_view_shows_ready_and_the_failure_message() {
    let v = cluster_status(
        "edge-1",
        json!({
            "at": "2026-11-24T09:00:00Z", "nextTransition": null,
            "open": true, "closedBy": [], "gates": [],
            "objects": [
                {"kind": "Kustomization", "namespace": "apps", "name": "api", "gates": ["g"],
                 "suspended": false, "suspendedBy": [], "suspendedByHuman": false,
                 "ignored": false, "reportedAt": "2026-11-24T09:00:00Z",
                 "ready": "True", "readyReason": "ReconciliationSucceeded",
                 "readyMessage": "Applied revision: main@sha1:aaa", "held": false},
                {"kind": "Kustomization", "namespace": "apps", "name": "web", "gates": ["g"],
                 "suspended": false, "suspendedBy": [], "suspendedByHuman": false,
                 "ignored": false, "reportedAt": "2026-11-24T09:00:00Z",
                 "ready": "False", "readyReason": "HealthCheckFailed", "stalled": true,
                 "readyMessage": "health check failed after 5m: Deployment/apps/web not ready",
                 "held": false},
                {"kind": "HelmRelease", "namespace": "apps", "name": "old", "gates": ["g"],
                 "suspended": false, "suspendedBy": [], "suspendedByHuman": false,
                 "ignored": false, "reportedAt": "2026-11-24T09:00:00Z", "held": false}
            ],
            "counts": counts(3, 0, 0),
            "heldObjects": []
        }),
    );
    let out = render_cluster(&v, None);
    assert!(out.contains("READY"), "{out}");
    assert!(out.contains("False (HealthCheckFailed), stalled"), "{out}");
    assert!(
        out.contains(
            "not ready:\n  Kustomization apps/web: health check failed after 5m: Deployment/apps/web not ready"
        ),
        "{out}"
    );
    assert!(
        !out.contains("Applied revision"),
        "a Ready message is not repeated: {out}"
    );
    let old = out.lines().find(|l| l.contains(" old ")).unwrap();
    assert!(old.contains(" - "), "no Ready reported: {old}");
}

#[test]
fn cluster_shows_held_objects() {
    let v = cluster_status(
        "prod-1",
        json!({
            "at": "2026-11-24T09:00:00Z", "nextTransition": null,
            "open": false, "closedBy": ["nginx-window"],
            "gates": [{"gate": "nginx-window", "state": "closed", "held": 0, "heldObjects": 1,
                       "reason": "default (closed)", "nextTransition": null, "objects": []}],
            "objects": [],
            "counts": counts(0, 1, 1),
            "heldObjects": [
                {"group": "apps", "kind": "Deployment", "namespace": "nginx", "name": "nginx",
                 "kustomizationNamespace": "flux-system", "kustomizationName": "apps",
                 "gates": ["nginx-window"], "heldBy": ["nginx-window"], "heldByPerson": false,
                 "heldSinceRevision": "main@sha1:aaa", "newerRevisionApplied": true,
                 "heldSince": "2026-11-24T08:30:00Z", "held": true,
                 "reportedAt": "2026-11-24T09:00:00Z"},
                {"group": "", "kind": "Service", "namespace": "nginx", "name": "legacy",
                 "kustomizationNamespace": "flux-system", "kustomizationName": "apps",
                 "gates": ["nginx-window"], "heldBy": [], "heldByPerson": true,
                 "heldSinceRevision": null, "newerRevisionApplied": false,
                 "heldSince": null, "held": true, "reportedAt": "2026-11-24T09:00:00Z"}
            ]
        }),
    );
    let out = render_cluster(&v, None);
    let row = out
        .lines()
        .find(|l| l.starts_with("Deployment.apps"))
        .unwrap();
    for cell in [
        "nginx",
        "flux-system/apps",
        "nginx-window",
        "main@sha1:aaa",
        "yes",
    ] {
        assert!(row.contains(cell), "{cell} missing in {row:?}\n{out}");
    }
    let row = out.lines().find(|l| l.starts_with("Service ")).unwrap();
    assert!(row.contains("a person") && row.ends_with("no"), "{row:?}");
    assert!(!out.contains("HoldNotPermitted"), "{out}");
    // A kind the spoke may not hold is flagged on its row and below the table.
    let mut v = v;
    let mut np = v.held_objects[0].clone();
    np.object.kind = "StatefulSet".into();
    np.object.held_by.clear();
    np.object.newer_revision_applied = false;
    np.object.not_permitted = true;
    np.held = false;
    v.held_objects.push(np);
    let out = render_cluster(&v, None);
    let row = out
        .lines()
        .find(|l| l.starts_with("StatefulSet.apps"))
        .unwrap();
    assert!(row.contains("NOT PERMITTED"), "{row:?}");
    assert!(
        out.contains("WARNING HoldNotPermitted: 1 object(s)"),
        "{out}"
    );
    // A gate filter that selects nothing hides the list.
    assert!(!render_cluster(&v, Some("other")).contains("HELD OBJECT "));
}

#[test]
fn a_cluster_lists_the_requests_made_in_it_with_their_ids() {
    let v = cluster_status(
        "edge-1",
        json!({
            "at": "2026-11-24T10:05:00Z", "nextTransition": null,
            "open": false, "closedBy": ["sre-approval"],
            "gates": [{"gate": "sre-approval", "state": "closed", "held": 0, "heldObjects": 0,
                       "reason": "override", "nextTransition": null, "objects": []}],
            "objects": [], "heldObjects": [],
            "localRequests": [{
                "id": "0b5c1f7e-0000-4000-8000-000000000001", "gate": "sre-approval",
                "state": "closed", "requestedBy": "alice", "requestedIn": "edge-1",
                "clusters": {"names": ["edge-1"]},
                "startsAt": "2026-11-24T10:00:00Z", "createdAt": "2026-11-24T10:00:00Z",
                "expiresAt": "2026-11-24T11:00:00Z", "actor": "alice@cluster/edge-1",
                "reason": "incident 7", "cancelledAt": null, "cancelledBy": null
            }]
        }),
    );
    let text = render_cluster(&v, None);
    assert!(text.contains("Requests made in the cluster"), "{text}");
    let row = text
        .lines()
        .find(|l| l.contains("alice"))
        .expect("a row for the request");
    for part in [
        "close",
        "sre-approval",
        "incident 7",
        "0b5c1f7e-0000-4000-8000-000000000001",
    ] {
        assert!(row.contains(part), "{part} not in {row}");
    }
    assert!(!render_cluster(&v, Some("other")).contains("Requests made"));
}

#[test]
fn a_cluster_lists_its_local_gates_read_only() {
    let v = cluster_status(
        "edge-1",
        json!({
            "at": "2026-11-24T10:05:00Z", "nextTransition": null,
            "open": false, "closedBy": ["git-freeze"], "gates": [], "objects": [],
            "heldObjects": [],
            "localGates": [
                {"name": "git-freeze", "enforced": true, "state": "closed", "reason": "Default",
                 "message": "default (closed)", "nextTransition": null, "governed": 2, "held": 1,
                 "ready": "True", "readyReason": "Enforced", "readyMessage": "gate in force"},
                {"name": "other", "enforced": false, "state": "closed", "reason": "",
                 "message": "", "nextTransition": null, "governed": 0, "held": 0,
                 "ready": "False", "readyReason": "NotEnforced",
                 "readyMessage": "hub setting --local-gates=ignore"}
            ]
        }),
    );
    let text = render_cluster(&v, None);
    assert!(text.contains("no (closed by git-freeze)"), "{text}");
    let row = text.lines().find(|l| l.starts_with("git-freeze")).unwrap();
    for part in ["yes", "closed", "1/2", "Default: default (closed)"] {
        assert!(row.contains(part), "{part} not in {row}");
    }
    let row = text.lines().find(|l| l.starts_with("other")).unwrap();
    assert!(
        row.contains("NotEnforced: hub setting --local-gates=ignore"),
        "{row}"
    );
    assert!(!render_cluster(&v, Some("nope")).contains("Local gates"));
}

/// Issue 32 item 6: a cluster whose rollout wave failed does not read READY True in the fleet
/// table (a halted rollout keeps its canary open); its row and a list below the table name
/// the failing object and why.
#[test]
fn a_failed_canary_stands_out_in_the_fleet_table() {
    let counts = counts(1, 0, 0);
    let failure = json!({
        "rolloutId": "5f1c0000-0000-4000-8000-000000000001", "state": "halted",
        "wave": 1, "waveName": "canary", "failedAt": "2026-11-24T09:10:00Z",
        "detail": "Kustomization flux-system/apps: Ready=False: health check failed after 30s: Deployment/apps/web not ready"
    });
    let v: FleetStatus = serde_json::from_value(json!({
        "summary": {
            "at": "2026-11-24T09:15:00Z", "revision": 7,
            "clusters": {"total": 2, "connected": 2, "disconnected": 0, "open": 1,
                         "closed": 1, "withHeld": 0, "withHeldObjects": 0, "rolloutFailed": 1},
            "gates": [], "objects": counts.clone(), "disconnected": []
        },
        "clusters": [
            {"cluster": cluster("canary-1"), "open": true, "closedBy": [],
             "nextTransition": null, "counts": counts.clone(),
             "gates": [{"gate": "waves", "state": "open", "reason": "default (open)",
                        "nextTransition": null, "held": 0, "heldObjects": 0,
                        "rolloutFailure": failure}]},
            {"cluster": cluster("prod-1"), "open": false, "closedBy": ["waves"],
             "nextTransition": null, "counts": counts,
             "gates": [{"gate": "waves", "state": "closed",
                        "reason": "waiting for rollout wave 2 (rollout halted)",
                        "nextTransition": null, "held": 1, "heldObjects": 0}]}
        ]
    }))
    .unwrap();
    let out = render_fleet(&v, None);
    let row = out.lines().find(|l| l.starts_with("canary-1")).unwrap();
    let header = out.lines().find(|l| l.starts_with("CLUSTER")).unwrap();
    let ready_at = header.find("READY").unwrap();
    assert_eq!(
        &row[ready_at..ready_at + 6],
        "Failed",
        "READY of the failed canary:\n{out}"
    );
    assert!(
        row.contains("waves: rollout wave 1 'canary' failed: Kustomization flux-system/apps"),
        "{row}"
    );
    let waiting = out.lines().find(|l| l.starts_with("prod-1")).unwrap();
    assert_eq!(&waiting[ready_at..ready_at + 5], "False", "{out}");
    assert!(out.contains("rollout failed: 1"), "{out}");
    assert!(
        out.contains(
            "FAILED rollout waves:\n  canary-1 (gate waves, at 2026-11-24T09:10:00Z): rollout wave 1 'canary' failed: \
             Kustomization flux-system/apps: Ready=False: health check failed after 30s: Deployment/apps/web not ready\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("fleetgate rollout resume waves"),
        "how to go on: {out}"
    );
    // A gate filter for another gate leaves the failure out.
    assert!(!render_fleet(&v, Some("other")).contains("FAILED"));
}
