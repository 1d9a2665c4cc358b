//! The real spoke against the simulator: a Kustomization annotated
//! `fleetgate.io/ignore: "true"` (deploy/flux's annotation on the spoke's own) stays running
//! while a gate targeting every Kustomization is closed and is reported as ignored; without
//! the annotation the gate suspends it and the spoke says, once, that a gate holds its own
//! delivery (an Event on it).

mod support;

use fleetgate_proto::v1 as pb;
use fleetgate_spoke::suspend::annotations;
use support::*;

fn freeze(revision: u64) -> pb::Snapshot {
    snapshot(
        revision,
        vec![gate("freeze", "suspend", &["Kustomization"], "closed")],
        vec![],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_spokes_own_kustomization_is_ignored_and_a_hold_on_it_is_reported() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    let mut own = kustomization("fleetgate-spoke", "repo", false);
    own["metadata"]["annotations"] = serde_json::json!({annotations::IGNORE: "true"});
    create(&cluster, own).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    let mut hub = FakeHub::start().await;
    hub.set(freeze(1));
    let mut config = spoke_config(Some(hub.url()));
    config.own_kustomization = format!("{NS}/fleetgate-spoke");
    let spoke = RunningSpoke::start(&cluster, config).await;

    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended",
        suspended,
    )
    .await;
    let report = hub
        .report_where("apps suspended, spoke's own reported ignored", |r| {
            r.objects.iter().any(|o| o.name == "apps" && o.suspended)
                && r.objects
                    .iter()
                    .any(|o| o.name == "fleetgate-spoke" && o.ignored)
        })
        .await;
    let own = report
        .objects
        .iter()
        .find(|o| o.name == "fleetgate-spoke")
        .unwrap();
    assert!(
        !own.suspended && !own.held && own.suspended_by.is_empty(),
        "{own:?}"
    );
    assert_eq!(own.gates, ["freeze"]);
    let apps = report.objects.iter().find(|o| o.name == "apps").unwrap();
    assert!(!apps.ignored);
    let obj = api(&cluster.client, "Kustomization")
        .get("fleetgate-spoke")
        .await
        .unwrap();
    assert!(!suspended(&obj));

    // Someone drops the annotation: now the gate holds spoke upgrades, and the spoke says so.
    api(&cluster.client, "Kustomization")
        .patch(
            "fleetgate-spoke",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({
                "metadata": {"annotations": {annotations::IGNORE: null}}
            })),
        )
        .await
        .unwrap();
    wait_for(
        &cluster.client,
        "Kustomization",
        "fleetgate-spoke",
        "suspended once no longer ignored",
        suspended,
    )
    .await;
    let event = wait_event(&cluster.client, "SpokeDeliveryGated", "fleetgate-spoke").await;
    let note = event.note.unwrap_or_default();
    assert!(
        note.contains("freeze") && note.contains("fleetgate.io/ignore"),
        "{note}"
    );
    spoke.stop().await;
    hub.stop().await;
}
