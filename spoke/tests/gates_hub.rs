//! A hub-connected spoke mirrors the hub's gates into Gate objects: a person's
//! spec edit is reverted with a Warning Event; a local open request on a hub
//! gate is refused by default (Warning, nothing changes) while a close request
//! is honoured at once, also with the hub gone; a Gate made in the cluster is
//! reported as not enforced (condition and Warning Event), and when the hub
//! sends a gate of its name the hub's wins (NameConflict); a gate the hub
//! drops is deleted.

mod support;

use chrono::{SecondsFormat, Utc};
use support::*;

fn z(t: chrono::DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[tokio::test]
async fn mirrored_gates_revert_edits_and_take_local_requests() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        3,
        vec![
            gate("release", "suspend", &["Kustomization"], "open"),
            gate("extra", "suspend", &["HelmRelease"], "open"),
        ],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    let k = Kubectl::new(&cluster);

    let g = wait_gate(&cluster.client, "release", "mirrored and open", |o| {
        opened(o) == Some(("True".into(), "Default".into()))
    })
    .await;
    assert_eq!(
        g.metadata.labels.as_ref().unwrap()["fleetgate.io/origin"],
        "hub"
    );
    assert_eq!(g.data["status"]["origin"], "hub");
    assert_eq!(g.data["status"]["revision"], 3);
    let hub_spec = spec_of(&g).clone();

    // A person's edit of the spec is reverted, with a Warning saying so.
    k.ok(&[
        "patch",
        "gate",
        "release",
        "--type=merge",
        "-p",
        r#"{"spec":{"default":"closed"}}"#,
    ])
    .await;
    let e = wait_gate_event(
        &cluster.client,
        "SpecReverted",
        "release",
        "change it at the hub",
    )
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    wait_gate(&cluster.client, "release", "spec reverted", |o| {
        *spec_of(o) == hub_spec
    })
    .await;
    let ks = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    assert!(!suspended(&ks), "the reverted edit never closed the gate");

    // Opening from the cluster is off by default for hub gates.
    k.ok(&[
        "annotate",
        "gate/release",
        &format!("open.gate.fleetgate.io/requestedAt={}", z(Utc::now())),
    ])
    .await;
    let e = wait_gate_event(
        &cluster.client,
        "RequestIgnored",
        "release",
        "spec.localRequests.open",
    )
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));

    // A Gate object made in the cluster is not enforced next to the hub's.
    k.apply("apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: local-freeze}\nspec:\n  clusters: {selector: {}}\n  default: closed\n").await;
    wait_gate(&cluster.client, "local-freeze", "not enforced", |o| {
        condition(o, "Ready", "reason") == Some("NotEnforced")
    })
    .await;
    let e = wait_gate_event(
        &cluster.client,
        "NotEnforced",
        "local-freeze",
        "--local-gates=ignore",
    )
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));

    // The hub gets a gate of the same name: the hub's gate wins, the Gate
    // made in the cluster says so and is not taken over by the mirror.
    hub.set(snapshot(
        4,
        vec![
            gate("release", "suspend", &["Kustomization"], "open"),
            gate("extra", "suspend", &["HelmRelease"], "open"),
            gate("local-freeze", "suspend", &["HelmRelease"], "open"),
        ],
        vec![],
    ));
    let g = wait_gate(&cluster.client, "local-freeze", "name conflict", |o| {
        condition(o, "Ready", "reason") == Some("NameConflict")
    })
    .await;
    assert!(
        g.metadata
            .labels
            .as_ref()
            .is_none_or(|l| !l.contains_key("fleetgate.io/origin")),
        "the mirror left the Gate made in the cluster alone"
    );
    assert_eq!(spec_of(&g)["default"], "closed");
    let e = wait_gate_event(
        &cluster.client,
        "NameConflict",
        "local-freeze",
        "wins on this cluster",
    )
    .await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));

    // Closing works with the hub gone: applied at once, from the cluster.
    hub.stop().await;
    k.ok(&[
        "annotate",
        "--overwrite",
        "gate/release",
        &format!("close.gate.fleetgate.io/requestedAt={}", z(Utc::now())),
        "close.gate.fleetgate.io/reason=incident 42",
    ])
    .await;
    let g = wait_gate(&cluster.client, "release", "closed by request", |o| {
        opened(o) == Some(("False".into(), "CloseRequested".into()))
    })
    .await;
    assert!(
        condition(&g, "Opened", "message")
            .unwrap_or_default()
            .contains("incident 42")
    );
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "held offline",
        suspended,
    )
    .await;
    spoke.stop().await;
}

#[tokio::test]
async fn a_gate_the_hub_drops_is_deleted() {
    let cluster = start_cluster().await;
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![gate("old", "suspend", &["Kustomization"], "open")],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    wait_gate(&cluster.client, "old", "mirrored", |o| opened(o).is_some()).await;
    hub.set(snapshot(
        2,
        vec![gate("new", "suspend", &["Kustomization"], "closed")],
        vec![],
    ));
    wait_gate(&cluster.client, "new", "mirrored closed", |o| {
        opened(o) == Some(("False".into(), "Default".into()))
    })
    .await;
    let fut = async {
        use futures::StreamExt;
        let stream = kube::runtime::watcher::watch_object(gates(&cluster.client), "old");
        let mut stream = std::pin::pin!(stream);
        while let Some(ev) = stream.next().await {
            if let Ok(None) = ev {
                return;
            }
        }
    };
    tokio::time::timeout(WAIT, fut)
        .await
        .expect("old gate deleted");
    spoke.stop().await;
    hub.stop().await;
}
