//! U+0000 (NUL) and overlong text in the spoke's OWN writes (issue 40), against the
//! simulator, which refuses text where kube-apiserver does (names, labels, ConfigMap
//! keys, an Event note over 1024 bytes, CRD patterns) and stores NUL elsewhere, as
//! kube-apiserver does (`fleetgate_sim`'s `builtin` module cites the sources).
//!
//! The hub sends a closing override whose reason holds a NUL and 1,200 bytes of text,
//! and a gate description with a NUL; a Kustomization's Ready message holds a NUL.
//! - The suspend goes through; the GateClosed Event is written with U+FFFD for the NUL
//!   and its note cut to the API server's 1024 bytes (before: 1000 *characters*, which
//!   the real API server refuses when they are not ASCII: no Event at all).
//! - The mirrored Gate keeps the hub's description as sent (the API server stores
//!   NUL) and its `Opened` message says the reason with U+FFFD.
//! - The snapshot ConfigMap holds the reason exactly (JSON escapes NUL as `\u0000`),
//!   and a spoke restarted with the hub gone suspends from it again.
//! - The report carries the Ready message as the cluster has it (the hub stores it
//!   with U+FFFD, `hub/tests/report_isolation.rs`).

mod support;

use std::collections::BTreeMap;

use chrono::Utc;
use fleetgate_sim::Failure;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::{Value, json};
use support::*;

const SNAPSHOT_CM: &str = "fleetgate-spoke-snapshot";

fn reason() -> String {
    format!("CHG-7 bad \u{0} byte {}", "é".repeat(600))
}

#[tokio::test]
async fn nul_and_long_text_never_break_the_spokes_writes() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    // A Ready message with NUL, as a build error quoting a binary file has.
    let failure = Failure::new("kustomize build failed: bad byte \u{0} here");
    let manifests = BTreeMap::new();
    (cluster.sim)
        .push_failing(
            CLUSTER,
            ("GitRepository", NS, "repo"),
            &revision(2),
            Some(&manifests),
            &failure,
        )
        .await
        .expect("push");

    let hub = FakeHub::start().await;
    let mut rule = gate("release", "suspend", &["Kustomization"], "open");
    let mut manifest: Value = serde_json::from_str(&rule.manifest_json).unwrap();
    manifest["spec"]["description"] = json!("release \u{0} train");
    rule.manifest_json = manifest.to_string();
    let mut close = override_from(
        "release",
        "closed",
        Utc::now() - chrono::Duration::minutes(1),
    );
    close.reason = reason();
    hub.set(snapshot(2, vec![rule], vec![close]));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;

    // The suspend and its Event.
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended",
        suspended,
    )
    .await;
    let e = wait_event(&cluster.client, "GateClosed", "apps").await;
    let note = e.note.unwrap_or_default();
    assert!(note.len() <= 1024, "{} bytes", note.len());
    assert!(
        note.contains("bad \u{FFFD} byte") && !note.contains('\u{0}'),
        "{note:?}"
    );
    assert!(note.ends_with(" ..."), "cut notes say so: {note:?}");

    // The mirrored Gate: spec as the hub sent it, the condition readable.
    let g = wait_gate(&cluster.client, "release", "mirrored and closed", |o| {
        opened(o).is_some_and(|(s, _)| s == "False")
    })
    .await;
    assert_eq!(spec_of(&g)["description"], "release \u{0} train");
    let message = condition(&g, "Opened", "message").unwrap_or_default();
    assert!(
        message.contains("bad \u{FFFD} byte") && !message.contains('\u{0}'),
        "{message:?}"
    );

    // The persisted snapshot holds the reason exactly.
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), SPOKE_NS);
    let cm = cms.get(SNAPSHOT_CM).await.expect("snapshot ConfigMap");
    let text = &cm.data.as_ref().unwrap()["snapshot.json"];
    assert!(!text.contains('\u{0}') && text.contains("\\u0000"));
    // serde_json writes the reason the same way (NUL as `\u0000`) in both.
    let encoded = serde_json::to_string(&reason()).unwrap();
    assert!(text.contains(&encoded), "the reason, exactly");
    serde_json::from_str::<Value>(text).expect("the snapshot parses");

    // The report carries the cluster's text as it is.
    spoke
        .report_where("apps' Ready message", |r| {
            r.objects.iter().any(|o| {
                o.key.name == "apps"
                    && (o.readiness.ready.as_ref()).is_some_and(|r| r.message == failure.message)
            })
        })
        .await;

    // Restarted with the hub gone, the spoke suspends again from the snapshot.
    spoke.stop().await;
    hub.stop().await;
    set_suspend_by_hand(&cluster.client, "Kustomization", "apps", false).await;
    let offline =
        RunningSpoke::start(&cluster, spoke_config(Some("http://127.0.0.1:9".into()))).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended from the snapshot",
        suspended,
    )
    .await;
    offline.stop().await;
}

/// What the simulator refuses, as kube-apiserver does: NUL in a ConfigMap key, an Event
/// note over 1024 bytes (the spoke's own writes would fail there, not elsewhere).
#[tokio::test]
async fn the_simulator_refuses_text_where_kube_apiserver_does() {
    let cluster = start_cluster().await;
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), SPOKE_NS);
    let cm = |key: &str, value: &str| -> ConfigMap {
        serde_json::from_value(json!({"metadata": {"name": "t"}, "data": {key: value}})).unwrap()
    };
    let err = cms
        .create(&PostParams::default(), &cm("a\u{0}b", "x"))
        .await
        .expect_err("NUL in a key");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 422),
        "{err}"
    );
    cms.create(&PostParams::default(), &cm("k", "a\u{0}b"))
        .await
        .expect("NUL in a value is stored");
    let stored = cms.get("t").await.unwrap();
    assert_eq!(stored.data.unwrap()["k"], "a\u{0}b");

    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(cluster.client.clone(), NS);
    let ev = |note: String| -> k8s_openapi::api::events::v1::Event {
        serde_json::from_value(json!({
            "metadata": {"name": "apps.1"}, "eventTime": "2026-11-27T10:00:00.000000Z",
            "type": "Normal", "reason": "GateClosed", "action": "Suspend", "note": note,
            "reportingController": "fleetgate-spoke", "reportingInstance": "pod-1",
            "regarding": {"kind": "Kustomization", "namespace": NS, "name": "apps"}}))
        .unwrap()
    };
    let err = events
        .create(&PostParams::default(), &ev("é".repeat(513)))
        .await
        .expect_err("a note over 1024 bytes");
    assert!(
        err.to_string().contains("can have at most 1024 characters"),
        "{err}"
    );
}
