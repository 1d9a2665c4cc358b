//! The spoke persists what it enforces, however large the budgets let it be, and a restart
//! without the hub enforces exactly that: against the simulator, which refuses a ConfigMap
//! over 1 MiB as kube-apiserver does. A write cut short (shards written, head not) loads the
//! copy the head names; shards that do not add up load nothing; the layout of 0.1 and 0.2
//! spokes still loads; a write the API server refuses shows in the metrics, an Event, the
//! spoke's readiness and its report to the hub, and is retried until it succeeds.

mod support;

use std::collections::BTreeMap;

use fleetgate_policy::budgets::{CONFIGMAP_MAX_BYTES, SNAPSHOT_SHARD_BYTES};
use fleetgate_proto::v1 as pb;
use fleetgate_spoke::hub::snapshot::Snapshot;
use k8s_openapi::{ByteString, api::core::v1::ConfigMap};
use kube::{
    Api,
    api::{DynamicObject, PostParams},
    core::ApiResource,
};
use serde_json::{Value, json};
use support::*;

const HEAD: &str = "fleetgate-spoke-snapshot";

fn config_maps(cluster: &Cluster) -> Api<ConfigMap> {
    Api::namespaced(cluster.client.clone(), SPOKE_NS)
}

/// Waits until the head ConfigMap says `revision` (the spoke wrote it last).
async fn wait_persisted(cluster: &Cluster, revision: u64) -> DynamicObject {
    let api: Api<DynamicObject> = Api::namespaced_with(
        cluster.client.clone(),
        SPOKE_NS,
        &ApiResource::erase::<ConfigMap>(&()),
    );
    let want = revision.to_string();
    fleetgate_tests::watch_until(api, HEAD, "snapshot persisted", WAIT, |o| {
        o.data["data"]["revision"].as_str() == Some(want.as_str())
    })
    .await
}

/// The shard ConfigMaps present, by name.
async fn shards(cluster: &Cluster) -> BTreeMap<String, ConfigMap> {
    let list = config_maps(cluster)
        .list(&kube::api::ListParams::default())
        .await
        .unwrap();
    list.items
        .into_iter()
        .filter_map(|cm| {
            let name = cm.metadata.name.clone()?;
            name.starts_with(&format!("{HEAD}-")).then_some((name, cm))
        })
        .collect()
}

/// Bytes of a ConfigMap's values, as kube-apiserver counts them.
fn value_bytes(cm: &ConfigMap) -> usize {
    let data: usize = cm.data.iter().flatten().map(|(_, v)| v.len()).sum();
    let binary: usize = cm
        .binary_data
        .iter()
        .flatten()
        .map(|(_, v)| v.0.len())
        .sum();
    data + binary
}

/// The snapshot a running spoke enforces.
fn in_force(spoke: &RunningSpoke) -> Snapshot {
    spoke
        .ctx()
        .snapshot
        .borrow()
        .as_ref()
        .expect("a snapshot in force")
        .snapshot
        .clone()
}

/// A spoke whose hub is gone: nothing listens at its address.
async fn without_hub(cluster: &Cluster) -> RunningSpoke {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    RunningSpoke::start(cluster, spoke_config(Some(format!("http://{addr}")))).await
}

/// Serves `snap` from a fake hub to a new spoke until the spoke persisted it (and suspended
/// the Kustomizations `suspends`): the head ConfigMap then and the snapshot the spoke
/// enforced. Spoke and hub are stopped.
async fn persisted_through_hub(
    cluster: &Cluster,
    snap: pb::Snapshot,
    suspends: &[&str],
) -> (DynamicObject, Snapshot) {
    let revision = snap.revision;
    let hub = FakeHub::start().await;
    hub.set(snap);
    let spoke = RunningSpoke::start(cluster, spoke_config(Some(hub.url()))).await;
    for name in suspends {
        wait_for(
            &cluster.client,
            "Kustomization",
            name,
            "suspended",
            suspended,
        )
        .await;
    }
    let head = wait_persisted(cluster, revision).await;
    let enforced = in_force(&spoke);
    spoke.stop().await;
    hub.stop().await;
    (head, enforced)
}

/// Snapshot `revision`: one largest gate (its text from `text`) and `close-apps` closing
/// the Kustomization `apps`.
fn one_largest_gate(revision: u64, text: &mut Text) -> pb::Snapshot {
    let mut snap = snapshot(revision, vec![largest_gate("big", text)], vec![]);
    snap.gates
        .push(gate_named("close-apps", "suspend", &["apps"], "closed"));
    snap
}

/// What the head ConfigMap's `data` says of a sharded copy.
struct Sharded {
    format: String,
    /// The set of shard names it uses (`a` or `b`).
    slot: String,
    shards: usize,
    /// Bytes of the gzipped copy.
    length: usize,
}

fn sharded(head: &DynamicObject) -> Sharded {
    let data = &head.data["data"];
    let text = |key: &str| {
        data[key]
            .as_str()
            .unwrap_or_else(|| panic!("no {key} in {data}"))
            .to_owned()
    };
    let number = |key: &str| text(key).parse().unwrap_or_else(|e| panic!("{key}: {e}"));
    Sharded {
        format: text("format"),
        slot: text("slot"),
        shards: number("shards"),
        length: number("length"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_snapshot_is_persisted_and_a_restart_without_the_hub_enforces_exactly_it() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    // The worst case for compression: every free text at its budget, random letters.
    let snap = largest_snapshot(3, &mut Text::Random(0x5EED), &["apps", "later"]);
    let (head, enforced) = persisted_through_hub(&cluster, snap, &["apps"]).await;

    // Gzipped and sharded, every ConfigMap within kube-apiserver's limit.
    let Sharded {
        format,
        slot,
        shards: n,
        length,
    } = sharded(&head);
    assert_eq!(format, "gzip");
    assert!(
        n >= 2 && length > SNAPSHOT_SHARD_BYTES,
        "{n} shards, {length} bytes"
    );
    let present = shards(&cluster).await;
    assert_eq!(present.len(), n, "{:?}", present.keys());
    for i in 0..n {
        let cm = &present[&format!("{HEAD}-{slot}-{i}")];
        assert!(value_bytes(cm) <= CONFIGMAP_MAX_BYTES);
    }

    // Restarted without its hub, the spoke enforces exactly that snapshot: a Kustomization
    // created meanwhile is held by a gate only the persisted snapshot has.
    create(&cluster, kustomization("later", "repo", false)).await;
    let spoke = without_hub(&cluster).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "later",
        "suspended offline",
        suspended,
    )
    .await;
    assert!(
        in_force(&spoke) == enforced,
        "the snapshot read back differs"
    );
    let persisted = spoke.ctx().persistence.borrow().persisted.clone().unwrap();
    assert_eq!((persisted.revision, persisted.config_maps), (3, n + 1));
    eprintln!(
        "largest snapshot persisted: {} gates, {} bytes of JSON, {} bytes gzipped, {} ConfigMaps; read back in {:.2} s (debug build, loaded machine)",
        enforced.gates.len(),
        persisted.json_bytes,
        persisted.stored_bytes,
        persisted.config_maps,
        persisted.seconds
    );
    spoke.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_cut_short_loads_the_copy_the_head_names_and_a_bad_shard_loads_none() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    let mut text = Text::Random(7);
    let snap = one_largest_gate(4, &mut text);
    let (head, enforced) = persisted_through_hub(&cluster, snap, &[]).await;
    let Sharded {
        slot, shards: n, ..
    } = sharded(&head);
    assert!(n >= 2, "{n} shards");

    // A newer write cut short: its shards in the other set of names, the head not written.
    let other = if slot == "a" { "b" } else { "a" };
    for i in 0..n + 1 {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": {"name": format!("{HEAD}-{other}-{i}"),
                         "labels": {"fleetgate.io/snapshot-shard": "true"}},
        }))
        .unwrap();
        let cm = ConfigMap {
            binary_data: Some(BTreeMap::from([(
                "part".to_owned(),
                ByteString(text.take(SNAPSHOT_SHARD_BYTES).into_bytes()),
            )])),
            ..cm
        };
        config_maps(&cluster)
            .create(&PostParams::default(), &cm)
            .await
            .unwrap();
    }
    let spoke = without_hub(&cluster).await;
    spoke.wait_ready().await;
    assert!(in_force(&spoke) == enforced, "not the copy the head names");
    spoke.stop().await;

    // One byte of a named shard changed: the hash does not match, nothing loads, and the
    // spoke falls back to --enforce-without-snapshot (none: it changes nothing).
    let name = format!("{HEAD}-{slot}-1");
    let mut cm = config_maps(&cluster).get(&name).await.unwrap();
    let part = &mut cm.binary_data.as_mut().unwrap().get_mut("part").unwrap().0;
    part[100] ^= 0x20;
    config_maps(&cluster)
        .replace(&name, &PostParams::default(), &cm)
        .await
        .unwrap();
    let spoke = without_hub(&cluster).await;
    spoke.wait_ready().await;
    assert_eq!(spoke.ctx().revision(), 0);
    assert!(spoke.ctx().snapshot.borrow().is_none());
    let metrics = spoke.ctx().metrics.render();
    assert!(
        metrics.contains("fleetgate_spoke_reconcile_errors_total{error=\"persisted_snapshot\"} 1"),
        "{metrics}"
    );
    spoke.stop().await;

    // The next snapshot is written whole, and the shards no head names are deleted.
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        5,
        vec![gate_named("close-apps", "suspend", &["apps"], "closed")],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    let head = wait_persisted(&cluster, 5).await;
    // The spoke deletes what no head names right after writing the head.
    let mut rx = spoke.ctx().persistence.subscribe();
    tokio::time::timeout(
        WAIT,
        rx.wait_for(|p| p.persisted.as_ref().is_some_and(|p| p.revision == 5)),
    )
    .await
    .expect("revision 5 persisted")
    .unwrap();
    assert!(head.data["data"]["snapshot.json"].is_string());
    assert!(head.data["data"]["shards"].is_null());
    let left = shards(&cluster).await;
    assert!(left.is_empty(), "{:?}", left.keys());
    spoke.stop().await;
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_layout_of_older_spokes_loads_and_is_replaced() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    // Exactly what a 0.2.0 spoke wrote: pretty JSON in data.snapshot.json.
    let old = json!({
        "revision": 6, "cluster": CLUSTER,
        "gates": [{"name": "close-apps", "version": 1,
                   "manifest": serde_json::from_str::<Value>(&gate_named("close-apps", "suspend", &["apps"], "closed").manifest_json).unwrap()}],
        "overrides": [], "hubTime": "2026-11-30T10:00:00Z"
    });
    let cm: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": HEAD, "labels": {"app.kubernetes.io/managed-by": "fleetgate-spoke"}},
        "data": {"snapshot.json": serde_json::to_string_pretty(&old).unwrap(),
                 "revision": "6", "cluster": CLUSTER}
    }))
    .unwrap();
    config_maps(&cluster)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let spoke = without_hub(&cluster).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended",
        suspended,
    )
    .await;
    assert_eq!(spoke.ctx().revision(), 6);
    spoke.stop().await;

    // A large snapshot from the hub replaces it with the gzip layout (no key left behind).
    let snap = one_largest_gate(7, &mut Text::Repeated('x'));
    let (head, _) = persisted_through_hub(&cluster, snap, &[]).await;
    assert!(head.data["data"]["snapshot.json"].is_null());
    assert_eq!(head.data["data"]["format"], "gzip");
    assert!(head.data["binaryData"]["snapshot.json.gz"].is_string());
    let spoke = without_hub(&cluster).await;
    spoke.wait_ready().await;
    assert_eq!(spoke.ctx().revision(), 7);
    spoke.stop().await;
}

/// Waits for an Event with `reason` regarding the head ConfigMap.
async fn wait_head_event(cluster: &Cluster, reason: &str) -> k8s_openapi::api::events::v1::Event {
    use futures::StreamExt;
    use kube::runtime::{WatchStreamExt, watcher};
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(cluster.client.clone(), SPOKE_NS);
    let fut = async {
        let mut stream =
            std::pin::pin!(watcher(events, watcher::Config::default()).applied_objects());
        while let Some(ev) = stream.next().await {
            if let Ok(e) = ev
                && e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(HEAD)
            {
                return e;
            }
        }
        panic!("event watch ended waiting for {reason}");
    };
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for event {reason}"))
}

/// `GET /readyz` of a running spoke: status and body.
async fn readyz(spoke: &RunningSpoke) -> (u16, String) {
    let r = reqwest::get(format!("http://{}/readyz", spoke.http_addr()))
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_shows_everywhere_and_is_retried_until_it_succeeds() {
    // The spoke's ClusterRole only: its Role (the snapshot ConfigMaps) is missing, so the
    // API server refuses the write with 403.
    let (cluster, spoke_client) =
        cluster_with_rbac(&["clusterrole.yaml", "clusterrolebinding.yaml"]).await;
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SPOKE_NS}});
    cluster.sim.create_object(CLUSTER, namespace).await.unwrap();
    let mut hub = FakeHub::start().await;
    hub.set(snapshot(
        2,
        vec![gate_named("close-apps", "suspend", &["apps"], "closed")],
        vec![],
    ));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let spoke = RunningSpoke {
        spoke: Some(
            fleetgate_spoke::Spoke::start(
                spoke_client,
                spoke_config(Some(hub.url())),
                shutdown.clone(),
            )
            .await
            .unwrap(),
        ),
        shutdown,
    };
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended",
        suspended,
    )
    .await;

    // The hub hears it in the report.
    let report = hub
        .report_where("persistence failing", |r| {
            r.snapshot_persistence
                .as_ref()
                .is_some_and(|p| p.state == "failing")
        })
        .await;
    let p = report.snapshot_persistence.unwrap();
    assert_eq!((p.failing_revision, p.persisted_revision), (2, 0));
    assert!(p.error.contains("forbidden"), "{}", p.error);
    assert!(p.failing_since.is_some());
    // An Event on the head ConfigMap, the metrics, and readiness.
    let e = wait_head_event(&cluster, "SnapshotNotPersisted").await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    let note = e.note.unwrap_or_default();
    assert!(
        note.starts_with("Revision 2 is enforced but not persisted"),
        "{note}"
    );
    assert!(note.contains("would enforce no snapshot"), "{note}");
    let metrics = spoke.ctx().metrics.render();
    assert!(
        metrics.contains("fleetgate_spoke_snapshot_persist_failing 1"),
        "{metrics}"
    );
    assert!(
        !metrics.contains("fleetgate_spoke_snapshot_persist_failures_total 0"),
        "{metrics}"
    );
    spoke.wait_ready().await;
    let (status, body) = readyz(&spoke).await;
    assert_eq!(status, 503);
    assert!(
        body.starts_with("the snapshot in force (revision 2) is not persisted: "),
        "{body}"
    );

    // The Role arrives: the next attempt persists, and everything says so.
    for obj in deploy_rbac(&["role.yaml", "rolebinding.yaml"]) {
        let obj: Value = serde_json::from_str(&obj).unwrap();
        cluster.sim.create_object(CLUSTER, obj).await.unwrap();
    }
    wait_persisted(&cluster, 2).await;
    let report = hub
        .report_where("persisted", |r| {
            r.snapshot_persistence
                .as_ref()
                .is_some_and(|p| p.state == "persisted")
        })
        .await;
    let p = report.snapshot_persistence.unwrap();
    assert_eq!((p.persisted_revision, p.config_maps), (2, 1));
    assert!(p.error.is_empty() && p.failing_since.is_none());
    let e = wait_head_event(&cluster, "SnapshotPersisted").await;
    assert_eq!(e.type_.as_deref(), Some("Normal"));
    let (status, _) = readyz(&spoke).await;
    assert_eq!(status, 200);
    let metrics = spoke.ctx().metrics.render();
    assert!(
        metrics.contains("fleetgate_spoke_snapshot_persist_failing 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("fleetgate_spoke_snapshot_persisted_revision 2"),
        "{metrics}"
    );
    spoke.stop().await;
    hub.stop().await;
}
