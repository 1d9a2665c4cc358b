//! Offline safety and the hub connection, against the simulator: a window edge
//! enforced with the hub gone, a restart enforcing the persisted snapshot with
//! the hub down, the no-snapshot policies, clock offset, the reconnect Hello,
//! a rotated token file, and a hub-fetched calendar feed window across both
//! of its edges with the hub gone.

mod support;

use chrono::Utc;
use fleetgate_spoke::{WithoutSnapshot, suspend::annotations};
use kube::api::Api;
use support::*;

const MARK: &str = annotations::SUSPENDED_BY;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offline_window_edge_and_restart_from_the_persisted_snapshot() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    // The gate closes by itself a few seconds from now (an override starting
    // later); the hub disappears before that.
    let edge = Utc::now() + chrono::Duration::seconds(3);
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        7,
        vec![gate("edge", "suspend", &["Kustomization"], "open")],
        vec![override_from("edge", "closed", edge)],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    spoke
        .report_where("revision 7 enforced", |r| r.revision == 7)
        .await;
    let apps = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    // (Only meaningful if this machine got here before the edge; the
    // suspended-at check below holds either way.)
    if Utc::now() < edge {
        assert!(!suspended(&apps), "open before the edge");
    }
    hub.stop().await;

    let apps = wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended at the edge, hub gone",
        suspended,
    )
    .await;
    let at = annotation(&apps, annotations::SUSPENDED_AT).expect("suspended-at");
    let at = chrono::DateTime::parse_from_rfc3339(at).unwrap().to_utc();
    // suspended-at has second precision; the edge may have a fraction.
    assert!(
        at + chrono::Duration::seconds(1) > edge,
        "not suspended before the edge: {at} vs {edge}"
    );

    // The snapshot was persisted.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(cluster.client.clone(), SPOKE_NS);
    let cm = cms.get("fleetgate-spoke-snapshot").await.unwrap();
    assert_eq!(
        cm.data
            .as_ref()
            .unwrap()
            .get("revision")
            .map(String::as_str),
        Some("7")
    );
    spoke.stop().await;

    // Restart with the hub still down (nothing listens at its address): the
    // persisted snapshot is enforced — a Kustomization created meanwhile is suspended.
    create(&cluster, kustomization("meanwhile", "repo", false)).await;
    let dead_hub = format!("http://{}", free_addr().await);
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(dead_hub))).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "meanwhile",
        "suspended from the persisted snapshot",
        |o| suspended(o) && annotation(o, MARK) == Some("edge"),
    )
    .await;
    assert_eq!(spoke.ctx().revision(), 7);
    spoke.stop().await;
    cluster.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_any_snapshot_nothing_changes_unless_told() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    // Marked as fleetgate's from an earlier life, still suspended.
    let mut old = kustomization("old", "repo", true);
    old["metadata"]["annotations"] = serde_json::json!({ MARK: "gone" });
    create(&cluster, old).await;

    // Default (none): the first pass runs and changes nothing.
    let spoke = RunningSpoke::start(&cluster, spoke_config(None)).await;
    spoke.wait_ready().await;
    let ready = reqwest::get(format!("http://{}/readyz", spoke.http_addr()))
        .await
        .unwrap();
    assert!(ready.status().is_success());
    let ks = api(&cluster.client, "Kustomization");
    assert!(!suspended(&ks.get("apps").await.unwrap()));
    assert!(suspended(&ks.get("old").await.unwrap()));
    let metrics = reqwest::get(format!("http://{}/metrics", spoke.http_addr()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains("fleetgate_spoke_hub_connected 0"),
        "{metrics}"
    );
    spoke.stop().await;

    // closed: every Kustomization is suspended until a snapshot arrives.
    let mut config = spoke_config(None);
    config.enforce_without_snapshot = WithoutSnapshot::Closed;
    let spoke = RunningSpoke::start(&cluster, config).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended (closed)",
        |o| suspended(o) && annotation(o, MARK) == Some("fleetgate-no-snapshot"),
    )
    .await;
    spoke.stop().await;

    // open: what fleetgate suspended is resumed.
    let mut config = spoke_config(None);
    config.enforce_without_snapshot = WithoutSnapshot::Open;
    let spoke = RunningSpoke::start(&cluster, config).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "resumed (open)",
        |o| !suspended(o),
    )
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "old",
        "resumed (open)",
        |o| !suspended(o),
    )
    .await;
    spoke.stop().await;
    cluster.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reports_its_clock_offset_and_reconnects_with_the_held_revision() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    // The hub's clock runs an hour ahead: the spoke's offset is about -1 h.
    let mut hub = FakeHub::start_skewed(chrono::Duration::hours(1)).await;
    hub.set(snapshot(
        3,
        vec![gate("g", "suspend", &["Kustomization"], "open")],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    let report = hub
        .report_where("revision 3 with an offset", |r| {
            r.revision == 3 && r.clock_offset_ms != 0
        })
        .await;
    let hour_ms = 3_600_000;
    assert!(
        (report.clock_offset_ms + hour_ms).abs() < 60_000,
        "offset {} ms, expected about -{hour_ms}",
        report.clock_offset_ms
    );
    assert_eq!(report.objects.len(), 1);
    assert_eq!(report.objects[0].gates, vec!["g"]);
    let metrics = spoke.ctx().metrics.render();
    assert!(
        metrics.contains("fleetgate_spoke_hub_connected 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("fleetgate_spoke_snapshot_revision 3"),
        "{metrics}"
    );

    // The hub restarts (same address): the spoke reconnects and its Hello
    // carries the revision it holds, so the hub can skip a redundant snapshot.
    let addr = hub.addr;
    hub.stop().await;
    let hub2 = FakeHub::start_at(addr).await;
    let hello = hub2.wait_hello().await;
    assert_eq!(hello.revision, 3, "Hello carries the held revision");
    assert_eq!(hello.cluster, CLUSTER);
    spoke.stop().await;
    hub2.stop().await;
    cluster.sim.shutdown().await;
}

async fn free_addr() -> std::net::SocketAddr {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    l.local_addr().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_token_file_is_picked_up_on_reconnect() {
    let cluster = start_cluster().await;
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, "fgs_old-token\n").unwrap();
    let hub = FakeHub::start().await;
    hub.set(snapshot(1, vec![], vec![]));
    let mut config = spoke_config(Some(hub.url()));
    config.token = None;
    config.token_file = Some(token_file.clone());
    let spoke = RunningSpoke::start(&cluster, config).await;
    // Rejected with the old token (the hub saw it) ...
    hub.wait_authorization("Bearer fgs_old-token").await;
    // ... then the Secret is rotated: the next attempt uses the new file content.
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    let hello = hub.wait_hello().await;
    assert_eq!(hello.cluster, CLUSTER);
    spoke.stop().await;
    hub.stop().await;
    cluster.sim.shutdown().await;
}

/// A `calendar.url` window on a spoke: the hub sends the feed's occurrences in
/// the snapshot (`GateRule.calendars`); with the hub gone the spoke closes at
/// the event's start and, restarted from its persisted snapshot with the hub
/// still down, opens at the event's end, not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calendar_feed_window_offline_across_both_edges() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    let start = Utc::now() + chrono::Duration::seconds(5);
    let end = start + chrono::Duration::seconds(20);
    let manifest = serde_json::json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "cab"},
        "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"]},
                 "mode": "suspend", "default": "open",
                 "windows": [{"name": "freeze", "kind": "deny",
                              "calendar": {"url": "https://cal.example.com/cab.ics"}}]}
    });
    let mut rule = gate("cab", "suspend", &["Kustomization"], "open");
    rule.manifest_json = manifest.to_string();
    rule.calendars = vec![fleetgate_proto::v1::CalendarOccurrences {
        window: "freeze".into(),
        occurrences: vec![fleetgate_proto::v1::CalendarOccurrence {
            start: Some(fleetgate_proto::time::to_timestamp(start)),
            end: Some(fleetgate_proto::time::to_timestamp(end)),
            summary: "Change freeze".into(),
        }],
        stale_at: Some(fleetgate_proto::time::to_timestamp(
            Utc::now() + chrono::Duration::days(1),
        )),
    }];
    let hub = FakeHub::start().await;
    hub.set(snapshot(9, vec![rule], vec![]));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    spoke
        .report_where("revision 9 enforced", |r| r.revision == 9)
        .await;
    hub.stop().await;

    let apps = wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended at the event's start, hub gone",
        |o| suspended(o) && annotation(o, MARK) == Some("cab"),
    )
    .await;
    let at = annotation(&apps, annotations::SUSPENDED_AT).expect("suspended-at");
    let at = chrono::DateTime::parse_from_rfc3339(at).unwrap().to_utc();
    assert!(
        at + chrono::Duration::seconds(1) > start,
        "not suspended before the event: {at} vs {start}"
    );
    spoke.stop().await;

    // Restart with the hub still down: the occurrences come from the
    // persisted snapshot (without them the feed would count as never fetched
    // and the window would be open at once).
    let dead_hub = format!("http://{}", free_addr().await);
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(dead_hub))).await;
    let restarted_at = Utc::now();
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "resumed at the event's end",
        |o| !suspended(o),
    )
    .await;
    let resumed = Utc::now();
    assert_eq!(spoke.ctx().revision(), 9);
    if restarted_at < end {
        assert!(
            resumed >= end,
            "resumed at {resumed}, before the event ended at {end}"
        );
    }
    spoke.stop().await;
    cluster.sim.shutdown().await;
}
