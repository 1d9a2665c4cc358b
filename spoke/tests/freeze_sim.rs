//! Freezes on a real spoke against the simulator and a fake hub: every object a freeze
//! (the hub's, or the cluster's `fleetgate-freeze` ConfigMap) holds carries
//! `fleetgate.io/freeze-reason` naming the freeze and its reason; an object a gate already
//! held gets it too and keeps its gate's suspend after the freeze; the annotation goes when
//! the freeze ends; an object a person suspended is never touched.

mod support;

use chrono::Utc;
use fleetgate_proto::{time::to_timestamp, v1 as pb};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    api::{DeleteParams, PostParams},
};
use serde_json::json;
use support::*;

const MARK: &str = "fleetgate.io/suspended-by";
const REASON: &str = "fleetgate.io/freeze-reason";

/// A fleet freeze as the hub sends it: an override of the reserved gate.
fn hub_freeze(id: &str, actor: &str, reason: &str) -> pb::Override {
    pb::Override {
        id: id.into(),
        gate: fleetgate_policy::FREEZE_GATE.into(),
        state: "closed".into(),
        starts_at: Some(to_timestamp(Utc::now() - chrono::Duration::seconds(5))),
        expires_at: None,
        actor: actor.into(),
        reason: reason.into(),
        created_at: Some(to_timestamp(Utc::now())),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freeze_names_itself_on_what_it_suspends_and_goes_with_it() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    create(&cluster, kustomization("held", "repo", false)).await;
    // `flux suspend` by a person, before anything else.
    create(&cluster, kustomization("manual", "repo", true)).await;
    let deny = gate_named("deny", "suspend", &["held"], "closed");
    let hub = FakeHub::start().await;
    hub.set(snapshot(1, vec![deny.clone()], vec![]));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "held",
        "held by deny",
        |o| suspended(o) && annotation(o, MARK) == Some("deny") && annotation(o, REASON).is_none(),
    )
    .await;

    // The hub's freeze: `apps` (no gate) by the built-in gate, `held` by its own gate;
    // both name the freeze.
    hub.set(snapshot(
        2,
        vec![deny.clone()],
        vec![hub_freeze("7", "alice", "INC-123")],
    ));
    let named = "fleet freeze 7 by alice until unfrozen: INC-123";
    wait_for(&cluster.client, "Kustomization", "apps", "frozen", |o| {
        suspended(o)
            && annotation(o, MARK) == Some(fleetgate_policy::FREEZE_GATE)
            && annotation(o, REASON) == Some(named)
    })
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "held",
        "frozen too",
        |o| {
            suspended(o)
                && annotation(o, MARK) == Some("deny")
                && annotation(o, REASON) == Some(named)
        },
    )
    .await;
    let manual = api(&cluster.client, "Kustomization")
        .get("manual")
        .await
        .unwrap();
    assert!(suspended(&manual));
    assert_eq!(
        annotation(&manual, REASON),
        None,
        "a person's suspend is never touched"
    );
    assert_eq!(annotation(&manual, MARK), None);

    // The freeze ends: `apps` resumes without it, `held` stays held by its gate without it.
    hub.set(snapshot(3, vec![deny.clone()], vec![]));
    wait_for(&cluster.client, "Kustomization", "apps", "resumed", |o| {
        !suspended(o) && annotation(o, MARK).is_none() && annotation(o, REASON).is_none()
    })
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "held",
        "held by its gate alone",
        |o| suspended(o) && annotation(o, MARK) == Some("deny") && annotation(o, REASON).is_none(),
    )
    .await;

    // A freeze made in the cluster names its ConfigMap, who made it and why.
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client.clone(), SPOKE_NS);
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fleetgate-freeze", "namespace": SPOKE_NS},
        "data": {"reason": "INC-9 local"}
    }))
    .unwrap();
    let params = PostParams {
        field_manager: Some("bob".into()),
        ..Default::default()
    };
    cms.create(&params, &cm).await.unwrap();
    let local = "cluster freeze (ConfigMap fleetgate-freeze) by bob until unfrozen: INC-9 local";
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "frozen locally",
        |o| suspended(o) && annotation(o, REASON) == Some(local),
    )
    .await;
    cms.delete("fleetgate-freeze", &DeleteParams::default())
        .await
        .unwrap();
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "resumed again",
        |o| !suspended(o) && annotation(o, REASON).is_none(),
    )
    .await;
    let manual = api(&cluster.client, "Kustomization")
        .get("manual")
        .await
        .unwrap();
    assert!(suspended(&manual) && annotation(&manual, REASON).is_none());
    spoke.stop().await;
    hub.stop().await;
}
