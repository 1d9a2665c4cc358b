//! The release rule of rollout gates on a real spoke against the simulator and a fake hub:
//! a gate with `spec.rollout` inside its window stays closed (the Kustomization suspended)
//! until the hub's release for this opening arrives; its Gate object says why
//! (`Opened=False`, reason `WaitingForWave`, the wave named); a release from an earlier
//! opening is ignored; the release for this opening resumes the Kustomization. A spoke
//! that was offline during a freeze and reconnects to a snapshot whose opening fence is
//! after its release (the freeze ended; the hub has not staged the reopening yet) holds
//! the Kustomization again until the release for the new opening arrives. A freeze made in
//! the cluster (the `fleetgate-freeze` ConfigMap) and ended by deleting it keeps the gate
//! closed the same way until the hub releases the reopening.

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
        opening_fence: None,
        calendars: vec![],
    }
}

/// A two-hour window that opened `ago` (whole seconds): its start and end as the gate
/// names them, and the opening instant a release for it names.
fn window_opened(ago: Duration) -> (String, String, chrono::DateTime<Utc>) {
    let opened_at = Utc::now() - ago;
    let start = opened_at.to_rfc3339_opts(SecondsFormat::Secs, true);
    let end = (opened_at + Duration::hours(2)).to_rfc3339_opts(SecondsFormat::Secs, true);
    let opening = chrono::DateTime::parse_from_rfc3339(&start)
        .unwrap()
        .to_utc();
    (start, end, opening)
}

/// Wave `wave`'s release of this cluster for the opening at `at`.
fn release(at: chrono::DateTime<Utc>, wave: u32) -> Option<pb::RolloutRelease> {
    Some(pb::RolloutRelease {
        rollout_id: "r1".into(),
        opening_at: Some(to_timestamp(at)),
        wave,
    })
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
    let (start, end, opening) = window_opened(Duration::minutes(1));
    let release = |at| release(at, 1);
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

#[tokio::test]
async fn a_release_from_before_a_freeze_opens_nothing_after_it() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    let (start, end, opening) = window_opened(Duration::minutes(30));
    let release = |at| release(at, 2);
    // Released for this opening: open.
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![rollout_gate(&start, &end, release(opening), None)],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    wait_gate(&cluster.client, "waves", "open", |o| {
        opened(o) == Some(("True".into(), "AllowWindow".into()))
    })
    .await;
    let ks = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    assert!(!suspended(&ks));

    // The hub goes away; a freeze is made and cancelled meanwhile (this spoke never sees
    // it). The restarted hub's snapshot still names the old release (its driver has not
    // stepped yet) but fences the opening at the freeze's end.
    let addr = hub.addr;
    hub.stop().await;
    let freeze_end = Utc::now() - Duration::minutes(1);
    let mut fenced = rollout_gate(&start, &end, release(opening), None);
    fenced.opening_fence = Some(to_timestamp(freeze_end));
    let hub = FakeHub::start_at(addr).await;
    hub.set(snapshot(2, vec![fenced], vec![]));
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "held again",
        suspended,
    )
    .await;
    let g = wait_gate(&cluster.client, "waves", "revision 2 evaluated", |o| {
        o.data["status"]["revision"] == 2
    })
    .await;
    assert_eq!(opened(&g), Some(("False".into(), "WaitingForWave".into())));
    assert!(message(&g).contains("earlier opening"), "{}", message(&g));

    // The release for the reopening (the driver staged it): open again.
    let mut released = rollout_gate(&start, &end, release(freeze_end), None);
    released.opening_fence = Some(to_timestamp(freeze_end));
    hub.set(snapshot(3, vec![released], vec![]));
    wait_for(&cluster.client, "Kustomization", "apps", "resumed", |o| {
        !suspended(o)
    })
    .await;
    spoke.stop().await;
    hub.stop().await;
}

#[tokio::test]
async fn a_freeze_ended_in_the_cluster_reopens_only_with_the_hub_s_release() {
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::{DeleteParams, PostParams};

    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    let (start, end, opening) = window_opened(Duration::minutes(30));
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![rollout_gate(&start, &end, release(opening, 2), None)],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    wait_gate(&cluster.client, "waves", "open", |o| {
        opened(o) == Some(("True".into(), "AllowWindow".into()))
    })
    .await;

    // Frozen in the cluster, then unfrozen by deleting the ConfigMap.
    let cms: kube::Api<ConfigMap> = kube::Api::namespaced(cluster.client.clone(), SPOKE_NS);
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fleetgate-freeze", "namespace": SPOKE_NS},
        "data": {"reason": "INC-9"}
    }))
    .unwrap();
    cms.create(&PostParams::default(), &cm).await.unwrap();
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "frozen",
        suspended,
    )
    .await;
    cms.delete("fleetgate-freeze", &DeleteParams::default())
        .await
        .unwrap();
    let unfrozen = Utc::now();
    // The release held is for the opening before the freeze: the gate waits for its wave.
    let g = wait_gate(&cluster.client, "waves", "waiting for the reopening", |o| {
        opened(o) == Some(("False".into(), "WaitingForWave".into()))
    })
    .await;
    assert!(message(&g).contains("earlier opening"), "{}", message(&g));
    let ks = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    assert!(
        suspended(&ks),
        "a later wave stays held after its local freeze ends"
    );

    // The hub recorded the end and released this cluster's wave for the reopening.
    let at = unfrozen + Duration::seconds(1);
    let mut released = rollout_gate(&start, &end, release(at, 2), None);
    released.opening_fence = Some(to_timestamp(at));
    hub.set(snapshot(2, vec![released], vec![]));
    wait_for(&cluster.client, "Kustomization", "apps", "resumed", |o| {
        !suspended(o)
    })
    .await;
    spoke.stop().await;
    hub.stop().await;
}
