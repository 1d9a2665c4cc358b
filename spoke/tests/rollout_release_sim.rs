//! The release rule of rollout gates on a real spoke against the simulator and a fake hub:
//! a gate with `spec.rollout` inside its window stays closed (the Kustomization suspended)
//! until the hub's release for this opening arrives; its Gate object says why
//! (`Opened=False`, reason `WaitingForWave`, the wave named); a release from an earlier
//! opening is ignored; the release for this opening resumes the Kustomization.

mod support;

use chrono::{Duration, SecondsFormat, Utc};
use fleetgate_proto::{time::to_timestamp, v1 as pb};
use serde_json::json;
use support::*;

fn rollout_gate(
    start: &str,
    end: &str,
    release: Option<pb::RolloutRelease>,
    waiting: Option<pb::RolloutWaiting>,
) -> pb::GateRule {
    let manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "waves"},
        "spec": {
            "clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"]},
            "default": "closed",
            "windows": [{"name": "go", "kind": "allow", "start": start, "end": end}],
            "rollout": {"waves": [{"name": "canary", "clusters": {"names": ["c0"]}},
                                  {"name": "early", "count": 1}, {"name": "rest"}]}
        }
    });
    pb::GateRule {
        name: "waves".into(),
        version: 1,
        manifest_json: manifest.to_string(),
        release,
        waiting,
    }
}

fn message(o: &kube::api::DynamicObject) -> String {
    condition(o, "Opened", "message")
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn a_rollout_gate_opens_only_with_the_release_for_this_opening() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    // The window opened a minute ago: the gate's rules say open.
    let opened_at = (Utc::now() - Duration::minutes(1)).with_timezone(&Utc);
    let (start, end) = (
        opened_at.to_rfc3339_opts(SecondsFormat::Secs, true),
        (opened_at + Duration::hours(2)).to_rfc3339_opts(SecondsFormat::Secs, true),
    );
    let opening = chrono::DateTime::parse_from_rfc3339(&start)
        .unwrap()
        .to_utc();
    let release = |at: chrono::DateTime<Utc>| {
        Some(pb::RolloutRelease {
            rollout_id: "r1".into(),
            opening_at: Some(to_timestamp(at)),
            wave: 1,
        })
    };
    let waiting = Some(pb::RolloutWaiting {
        rollout_id: "r1".into(),
        wave: 1,
        wave_name: "early".into(),
    });

    // Not released: held, and the Gate object names the wave.
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![rollout_gate(&start, &end, None, waiting)],
        vec![],
    ));
    let _spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    wait_for(&cluster.client, "Kustomization", "apps", "held", suspended).await;
    let g = wait_gate(&cluster.client, "waves", "waiting for its wave", |o| {
        opened(o) == Some(("False".into(), "WaitingForWave".into()))
    })
    .await;
    assert_eq!(
        message(&g),
        "waiting for rollout wave 2 'early' (not released on this cluster yet)"
    );
    // `kubectl get gates` shows the reason.
    let listed = Kubectl::new(&cluster).ok(&["get", "gates"]).await;
    assert!(listed.contains("WaitingForWave"), "{listed}");

    // A release from an earlier opening (yesterday's) is ignored.
    hub.set(snapshot(
        2,
        vec![rollout_gate(
            &start,
            &end,
            release(opening - Duration::days(1)),
            None,
        )],
        vec![],
    ));
    let g = wait_gate(&cluster.client, "waves", "revision 2 evaluated", |o| {
        o.data["status"]["revision"] == 2
    })
    .await;
    assert_eq!(opened(&g), Some(("False".into(), "WaitingForWave".into())));
    assert!(message(&g).contains("earlier opening"), "{}", message(&g));
    let ks = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    assert!(suspended(&ks), "a stale release opens nothing");

    // The release for this opening: resumed, the gate open by its window.
    hub.set(snapshot(
        3,
        vec![rollout_gate(&start, &end, release(opening), None)],
        vec![],
    ));
    wait_for(&cluster.client, "Kustomization", "apps", "resumed", |o| {
        !suspended(o)
    })
    .await;
    wait_gate(&cluster.client, "waves", "open", |o| {
        opened(o) == Some(("True".into(), "AllowWindow".into()))
    })
    .await;
}
