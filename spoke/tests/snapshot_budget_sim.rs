//! The largest snapshot the budgets allow reaches the spoke over real gRPC and is enforced:
//! gates at every budget at once (a manifest of `GATE_MANIFEST_MAX_BYTES` with selectors at
//! their term and value budgets, feed windows at their occurrence budget with summaries at
//! theirs), as many as `SNAPSHOT_MAX_BYTES` holds. The hub encodes and the spoke decodes with
//! `GRPC_MAX_MESSAGE_BYTES`; before, the spoke's 4 MiB default refused such a snapshot in a
//! loop and a freeze never reached the cluster.

mod support;

use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_snapshot_the_budgets_allow_is_decoded_and_enforced() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    let snap = largest_snapshot(3, &mut Text::Repeated('v'), &["apps"]);
    eprintln!(
        "largest snapshot: {} gates, {} bytes",
        snap.gates.len(),
        prost::Message::encoded_len(&snap)
    );

    let hub = FakeHub::start().await;
    hub.set(snap);
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    spoke
        .report_where("revision 3 enforced", |r| r.revision == 3)
        .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended by close-apps",
        suspended,
    )
    .await;
    spoke.stop().await;
    hub.stop().await;
}
