//! The spoke's event recorder against the simulator: the first event about an
//! object is created, a repeat bumps its series instead of adding another, and
//! another reason or object gets its own event.

mod support;

use fleetgate_spoke::cluster::events::EventRecorder;
use k8s_openapi::api::{core::v1::ObjectReference, events::v1::Event};
use kube::api::{Api, ListParams};
use support::*;

fn regarding(name: &str) -> ObjectReference {
    ObjectReference {
        api_version: Some("kustomize.toolkit.fluxcd.io/v1".into()),
        kind: Some("Kustomization".into()),
        namespace: Some(NS.into()),
        name: Some(name.into()),
        uid: Some(format!("uid-{name}")),
        ..ObjectReference::default()
    }
}

#[tokio::test]
async fn repeats_grow_a_series_instead_of_new_events() {
    let cluster = start_cluster().await;
    let recorder = EventRecorder::new(
        cluster.client.clone(),
        "fleetgate-spoke",
        Some("pod-1".into()),
    );
    let apps = regarding("apps");
    for note in ["first", "second", "third"] {
        recorder
            .publish("GateClosed", "Suspend", note.into(), &apps)
            .await
            .expect("publish");
    }
    recorder
        .publish("GateOpened", "Resume", "resumed".into(), &apps)
        .await
        .expect("publish");
    recorder
        .publish("GateClosed", "Suspend", "other".into(), &regarding("infra"))
        .await
        .expect("publish");

    let events: Api<Event> = Api::namespaced(cluster.client.clone(), NS);
    let list = events
        .list(&ListParams::default())
        .await
        .expect("list events");
    let mut seen: Vec<(String, String, Option<i32>, String)> = list
        .items
        .iter()
        .filter(|e| e.reporting_controller.as_deref() == Some("fleetgate-spoke"))
        .map(|e| {
            (
                e.regarding
                    .as_ref()
                    .and_then(|r| r.name.clone())
                    .unwrap_or_default(),
                e.reason.clone().unwrap_or_default(),
                e.series.as_ref().map(|s| s.count),
                e.note.clone().unwrap_or_default(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        vec![
            ("apps".into(), "GateClosed".into(), Some(3), "first".into()),
            ("apps".into(), "GateOpened".into(), None, "resumed".into()),
            ("infra".into(), "GateClosed".into(), None, "other".into()),
        ]
    );
    let first = list
        .items
        .iter()
        .find(|e| e.series.is_some())
        .expect("the series event");
    assert_eq!(
        first.reporting_controller.as_deref(),
        Some("fleetgate-spoke")
    );
    assert_eq!(first.reporting_instance.as_deref(), Some("pod-1"));
    assert_eq!(first.type_.as_deref(), Some("Normal"));
    assert_eq!(first.action.as_deref(), Some("Suspend"));
}
