//! Enforcement against the test Kubernetes API server and Flux simulator, with
//! a fake hub on a real gRPC socket: suspend on close, held revisions reported,
//! resume + reconcile request on open, people's suspends untouched, new objects
//! caught, freezeSources, HelmReleases, 409 re-plan.

mod support;

use chrono::Utc;
use fleetgate_proto::v1 as pb;
use fleetgate_spoke::suspend::annotations;
use support::*;

const MARK: &str = annotations::SUSPENDED_BY;

/// The snapshot of the cycle test: one suspend-mode gate over Kustomizations.
fn weekdays(revision: u64, state: &str) -> pb::Snapshot {
    snapshot(
        revision,
        vec![gate("weekdays", "suspend", &["Kustomization"], state)],
        vec![],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_hold_open_cycle_with_human_suspend_and_late_object() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    create(&cluster, kustomization("manual", "repo", true)).await;
    push_and_wait_applied(&cluster, "apps", 1).await;

    let mut hub = FakeHub::start().await;
    hub.set(weekdays(1, "open"));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    hub.report_where("revision 1 enforced", |r| r.revision == 1)
        .await;

    // The gate closes: governed objects are suspended and marked, the person's
    // suspend is left exactly as it was.
    hub.set(weekdays(2, "closed"));
    let apps = wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended by fleetgate",
        |o| suspended(o) && annotation(o, MARK) == Some("weekdays"),
    )
    .await;
    assert!(annotation(&apps, annotations::SUSPENDED_AT).is_some());
    let manual = api(&cluster.client, "Kustomization")
        .get("manual")
        .await
        .unwrap();
    assert!(
        suspended(&manual) && annotation(&manual, MARK).is_none(),
        "a person's suspend is not claimed"
    );

    // A GateClosed event on the object, naming the gate.
    let event = wait_event(&cluster.client, "GateClosed", "apps").await;
    assert!(event.note.unwrap_or_default().contains("'weekdays'"));
    assert_eq!(
        event.reporting_controller.as_deref(),
        Some("fleetgate-spoke")
    );

    // A Kustomization created while closed is suspended when first seen.
    create(&cluster, kustomization("late", "repo", false)).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "late",
        "suspended on creation",
        |o| suspended(o) && annotation(o, MARK) == Some("weekdays"),
    )
    .await;

    // A pushed revision waits: reported held, through the stream.
    push(&cluster, "repo", &revision(2)).await;
    let report = hub
        .report_where("apps held", |r| {
            r.objects.iter().any(|o| o.name == "apps" && o.held)
        })
        .await;
    let apps_status = report.objects.iter().find(|o| o.name == "apps").unwrap();
    assert_eq!(apps_status.newest_source_revision, revision(2));
    assert_eq!(apps_status.last_applied_revision, revision(1));
    assert_eq!(apps_status.suspended_by, vec!["weekdays"]);
    let manual_status = report.objects.iter().find(|o| o.name == "manual").unwrap();
    assert!(manual_status.suspended_by_human && !manual_status.held);

    // The gate opens: resumed, marks removed, reconcile requested, and the
    // simulator applies the held revision. The person's suspend stays.
    hub.set(weekdays(3, "open"));
    let apps = wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "resumed and r2 applied",
        |o| {
            !suspended(o)
                && status_str(o, "/status/lastAppliedRevision") == Some(revision(2).as_str())
        },
    )
    .await;
    assert!(
        annotation(&apps, MARK).is_none() && annotation(&apps, annotations::SUSPENDED_AT).is_none()
    );
    assert!(
        annotation(&apps, annotations::REQUESTED_AT).is_some(),
        "reconcile requested"
    );
    wait_for(&cluster.client, "Kustomization", "late", "resumed", |o| {
        !suspended(o)
    })
    .await;
    // The report after the pass that resumed everything is the sync point.
    spoke
        .report_where("nothing suspended by fleetgate", |r| {
            r.revision == 3 && r.objects.iter().all(|o| o.suspended_by.is_empty())
        })
        .await;
    let manual = api(&cluster.client, "Kustomization")
        .get("manual")
        .await
        .unwrap();
    assert!(
        suspended(&manual) && annotation(&manual, MARK).is_none(),
        "a person's suspend survives a cycle"
    );

    // Second cycle: still untouched.
    hub.set(weekdays(4, "closed"));
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended again",
        suspended,
    )
    .await;
    hub.set(snapshot(5, vec![], vec![]));
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "gate removed: resumed",
        |o| !suspended(o),
    )
    .await;
    spoke
        .report_where("revision 5 enforced", |r| r.revision == 5)
        .await;
    let manual = api(&cluster.client, "Kustomization")
        .get("manual")
        .await
        .unwrap();
    assert!(suspended(&manual) && annotation(&manual, MARK).is_none());

    // The hub saw the token and the cluster.
    {
        let seen = hub.seen.lock().await;
        assert_eq!(seen.hellos[0].cluster, CLUSTER);
        assert_eq!(seen.authorization[0], format!("Bearer {TOKEN}"));
    }
    spoke.stop().await;
    hub.stop().await;
    cluster.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn freeze_sources_keeps_the_kustomization_reconciling() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    push_and_wait_applied(&cluster, "apps", 1).await;

    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![gate(
            "freeze",
            "freezeSources",
            &["Kustomization"],
            "closed",
        )],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    wait_for(
        &cluster.client,
        "GitRepository",
        "repo",
        "source frozen",
        |o| suspended(o) && annotation(o, MARK) == Some("freeze"),
    )
    .await;
    spoke
        .report_where("freeze enforced", |r| {
            r.revision == 1 && !r.objects.is_empty()
        })
        .await;
    let apps = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    assert!(
        !suspended(&apps),
        "the Kustomization itself is not suspended"
    );

    // The new revision does not reach the Kustomization, but it still reconciles
    // (drift correction): a reconcile request is handled.
    push(&cluster, "repo", &revision(2)).await;
    let asked = Utc::now().to_rfc3339();
    api(&cluster.client, "Kustomization")
        .patch(
            "apps",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"metadata": {"annotations": {annotations::REQUESTED_AT: asked}}})),
        )
        .await
        .unwrap();
    let apps = wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "reconciled while frozen",
        |o| status_str(o, "/status/lastHandledReconcileAt") == Some(asked.as_str()),
    )
    .await;
    assert_eq!(
        status_str(&apps, "/status/lastAppliedRevision"),
        Some(revision(1).as_str()),
        "held revision not applied"
    );

    // Open: the source is resumed and the Kustomization applies r2.
    hub.set(snapshot(
        2,
        vec![gate("freeze", "freezeSources", &["Kustomization"], "open")],
        vec![],
    ));
    wait_for(
        &cluster.client,
        "GitRepository",
        "repo",
        "source resumed",
        |o| !suspended(o) && annotation(o, MARK).is_none(),
    )
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "r2 applied",
        |o| status_str(o, "/status/lastAppliedRevision") == Some(revision(2).as_str()),
    )
    .await;
    spoke.stop().await;
    hub.stop().await;
    cluster.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_concurrent_human_edit_is_never_overwritten() {
    use fleetgate_policy::{FluxKind, Mode, Targets};
    use fleetgate_spoke::{
        cluster::observed::ObservedObject,
        suspend::enforce,
        suspend::plan::{GateView, Planner},
    };

    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    create(&cluster, kustomization("other", "repo", false)).await;
    let spoke = RunningSpoke::start(&cluster, spoke_config(None)).await;
    spoke.wait_ready().await;

    let ks = api(&cluster.client, "Kustomization");
    let stale: Vec<ObservedObject> = [
        ks.get("apps").await.unwrap(),
        ks.get("other").await.unwrap(),
    ]
    .iter()
    .map(|o| ObservedObject::from_dynamic(FluxKind::Kustomization, o))
    .collect();
    // After the spoke observed them, a person suspends `apps` and someone edits
    // `other` (a label): both stale plans now carry an old resourceVersion.
    set_suspend_by_hand(&cluster.client, "Kustomization", "apps", true).await;
    ks.patch(
        "other",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(serde_json::json!({"metadata": {"labels": {"team": "a"}}})),
    )
    .await
    .unwrap();

    let gates = vec![GateView {
        name: "g".into(),
        mode: Mode::Suspend,
        targets: Targets {
            kinds: vec![FluxKind::Kustomization],
            ..Targets::default()
        },
        objects: None,
        open: false,
        reason: "test".into(),
        warn: false,
    }];
    let planner = Planner::new(&gates, &stale);
    let steps = planner.plan(&stale).steps;
    assert_eq!(steps.len(), 2, "both planned from the stale view");
    let applied = enforce::apply(spoke.ctx(), &planner, &gates, steps).await;
    assert_eq!(applied.len(), 2);

    // 409 → re-read → re-plan: the person's suspend stays theirs (no mark), the
    // label edit is kept and `other` is suspended on top of it.
    let apps = ks.get("apps").await.unwrap();
    assert!(
        suspended(&apps) && annotation(&apps, MARK).is_none(),
        "human suspend not claimed"
    );
    let other = ks.get("other").await.unwrap();
    assert!(suspended(&other) && annotation(&other, MARK) == Some("g"));
    assert_eq!(
        other
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("team"))
            .map(String::as_str),
        Some("a")
    );
    let metrics = spoke.ctx().metrics.render();
    assert!(
        metrics.contains("fleetgate_spoke_reconcile_errors_total{error=\"conflict\"} 2"),
        "{metrics}"
    );
    spoke.stop().await;
    cluster.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helm_releases_are_suspended_held_and_their_sources_frozen() {
    // helm-controller generates a HelmChart `<namespace>-<name>` per release;
    // chart versions are pushed to those charts directly.
    const WEB_CHART: &str = "flux-system-web";
    const DB_CHART: &str = "flux-system-db";
    let cluster = start_cluster().await;
    create(&cluster, helm_repository("charts")).await;
    create(&cluster, helm_release("web", "charts")).await;
    create(&cluster, helm_release("db", "charts")).await;
    push_kind(&cluster, "HelmRepository", "charts", "sha256:index-1").await;
    for (chart, release) in [(WEB_CHART, "web"), (DB_CHART, "db")] {
        push_kind(&cluster, "HelmChart", chart, "1.0.0").await;
        wait_for(
            &cluster.client,
            "HelmRelease",
            release,
            "1.0.0 deployed",
            |o| status_str(o, "/status/history/0/chartVersion") == Some("1.0.0"),
        )
        .await;
    }

    // suspend mode on `web` only (by name).
    let web_gate = pb::GateRule {
        name: "web-window".into(),
        version: 1,
        manifest_json: serde_json::json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "web-window"},
            "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["HelmRelease"], "names": ["web"]}, "default": "closed"}
        })
        .to_string(),
        release: None,
        waiting: None,
        opening_fence: None,
        calendars: vec![],
    };
    let mut hub = FakeHub::start().await;
    hub.set(snapshot(1, vec![web_gate], vec![]));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    wait_for(&cluster.client, "HelmRelease", "web", "suspended", |o| {
        suspended(o) && annotation(o, MARK) == Some("web-window")
    })
    .await;
    push_kind(&cluster, "HelmChart", WEB_CHART, "1.1.0").await;
    push_kind(&cluster, "HelmChart", DB_CHART, "1.1.0").await;
    // `db` is not governed and upgrades; `web` is held at 1.0.0.
    wait_for(
        &cluster.client,
        "HelmRelease",
        "db",
        "1.1.0 deployed",
        |o| status_str(o, "/status/history/0/chartVersion") == Some("1.1.0"),
    )
    .await;
    let report = hub
        .report_where("web held", |r| {
            r.objects.iter().any(|o| o.name == "web" && o.held)
        })
        .await;
    let web = report.objects.iter().find(|o| o.name == "web").unwrap();
    assert_eq!(
        (
            web.last_applied_revision.as_str(),
            web.newest_source_revision.as_str()
        ),
        ("1.0.0", "1.1.0")
    );
    assert!(
        report.objects.iter().all(|o| o.name != "db"),
        "db is not governed"
    );

    // freezeSources over every HelmRelease: `web` resumes and upgrades to what
    // its chart already has, while the repository and the generated charts are
    // frozen, so a newer chart version waits until the thaw.
    hub.set(snapshot(
        2,
        vec![gate(
            "helm-freeze",
            "freezeSources",
            &["HelmRelease"],
            "closed",
        )],
        vec![],
    ));
    for (kind, name) in [
        ("HelmRepository", "charts"),
        ("HelmChart", WEB_CHART),
        ("HelmChart", DB_CHART),
    ] {
        wait_for(&cluster.client, kind, name, "frozen", |o| {
            suspended(o) && annotation(o, MARK) == Some("helm-freeze")
        })
        .await;
    }
    wait_for(
        &cluster.client,
        "HelmRelease",
        "web",
        "resumed and upgraded",
        |o| !suspended(o) && status_str(o, "/status/history/0/chartVersion") == Some("1.1.0"),
    )
    .await;
    push_kind(&cluster, "HelmChart", DB_CHART, "1.2.0").await;
    hub.set(snapshot(
        3,
        vec![gate(
            "helm-freeze",
            "freezeSources",
            &["HelmRelease"],
            "open",
        )],
        vec![],
    ));
    wait_for(
        &cluster.client,
        "HelmRelease",
        "db",
        "1.2.0 after the thaw",
        |o| status_str(o, "/status/history/0/chartVersion") == Some("1.2.0"),
    )
    .await;
    wait_for(&cluster.client, "HelmChart", DB_CHART, "thawed", |o| {
        !suspended(o)
    })
    .await;
    spoke.stop().await;
    hub.stop().await;
    cluster.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_report_goes_out_in_parts_and_arrives_whole() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    // ~150 B per object on the wire: 120 objects make a ~18 KiB report.
    for i in 0..120 {
        create(
            &cluster,
            kustomization(&format!("app-{i:03}"), "repo", false),
        )
        .await;
    }
    let mut hub = FakeHub::start().await;
    hub.set(weekdays(1, "open"));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    let report = hub
        .report_where("all 120 objects in one report", |r| {
            r.revision == 1 && r.objects.len() == 120
        })
        .await;
    let mut names: Vec<&str> = report.objects.iter().map(|o| o.name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 120);
    let parts = hub.seen.lock().await.report_parts.clone();
    // Several parts flagged `more`, each run ended by a last part.
    assert!(parts.iter().filter(|m| **m).count() >= 3, "{parts:?}");
    assert_eq!(parts.last(), Some(&false), "{parts:?}");
    spoke.stop().await;
    hub.stop().await;
    cluster.sim.shutdown().await;
}

/// The Flux inventory (most of a report's bytes) goes with the first report of a
/// stream and with the first after it changed; reports in between carry none,
/// and a restarted hub gets it again on the new stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inventory_goes_only_with_a_stream_s_first_report_and_after_a_change() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("a", "repo", false)).await;
    let mut hub = FakeHub::start().await;
    hub.set(weekdays(1, "open"));
    let mut config = spoke_config(Some(hub.url()));
    config.heartbeat_interval = std::time::Duration::from_millis(200);
    let spoke = RunningSpoke::start(&cluster, config).await;
    let names = |r: &pb::StatusReport| {
        let mut n: Vec<String> = r.inventory.iter().map(|o| o.name.clone()).collect();
        n.sort();
        n
    };
    // Before the first report that lists both objects, any report carrying the
    // inventory is one the spoke saw change (the watches fill in).
    let first = hub
        .report_where("the inventory on the stream's first report", |r| {
            r.has_inventory && r.inventory.len() == 2
        })
        .await;
    assert_eq!(names(&first), ["a", "repo"]);
    // Heartbeats: the same inventory, not carried.
    for _ in 0..3 {
        let r = hub.report_where("a heartbeat", |_| true).await;
        assert!(
            !r.has_inventory && r.inventory.is_empty(),
            "{:?}",
            names(&r)
        );
    }
    // A new Kustomization: carried once, then not again.
    create(&cluster, kustomization("b", "repo", false)).await;
    let changed = hub
        .report_where("the changed inventory", |r| r.has_inventory)
        .await;
    assert_eq!(names(&changed), ["a", "b", "repo"]);
    let r = hub.report_where("a heartbeat", |_| true).await;
    assert!(!r.has_inventory, "{:?}", names(&r));
    // The hub restarts: the new stream's first report carries it.
    let addr = hub.addr;
    hub.stop().await;
    let mut hub = FakeHub::start_at(addr).await;
    hub.set(weekdays(1, "open"));
    let r = hub
        .report_where("the first report after reconnect", |_| true)
        .await;
    assert!(r.has_inventory);
    assert_eq!(names(&r), ["a", "b", "repo"]);
    spoke.stop().await;
    hub.stop().await;
    cluster.sim.shutdown().await;
}
