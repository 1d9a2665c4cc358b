//! Flux health in the spoke's reports, against the simulator: a bad revision turns a
//! Kustomization and a HelmRelease Ready=False (with Flux's reasons and messages, the revision
//! attempted but not applied), the spoke reports it at once (not at the next heartbeat), and
//! the recovery after a good revision is reported too.

mod support;

use fleetgate_proto::v1 as pb;
use fleetgate_sim::Failure;
use support::*;

fn object<'a>(r: &'a pb::StatusReport, kind: &str, name: &str) -> Option<&'a pb::ObjectStatus> {
    r.objects.iter().find(|o| o.kind == kind && o.name == name)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_changes_are_reported_with_flux_reasons() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    create(&cluster, helm_repository("charts")).await;
    create(&cluster, helm_release("web", "charts")).await;
    push_and_wait_applied(&cluster, "apps", 1).await;

    let mut hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![gate(
            "always",
            "suspend",
            &["Kustomization", "HelmRelease"],
            "open",
        )],
        vec![],
    ));
    // The heartbeat (30 s in these tests) never sends the reports awaited below.
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    let r = hub
        .report_where("healthy", |r| {
            object(r, "Kustomization", "apps").is_some_and(|o| o.ready == "True")
                && object(r, "HelmRelease", "web").is_some_and(|o| o.ready == "True")
        })
        .await;
    let apps = object(&r, "Kustomization", "apps").unwrap();
    assert_eq!(apps.ready_reason, "ReconciliationSucceeded");
    assert_eq!(
        apps.ready_message,
        format!("Applied revision: {}", revision(1))
    );
    assert_eq!((apps.generation, apps.observed_generation), (1, 1));
    assert_eq!(apps.last_attempted_revision, revision(1));
    assert!(!apps.stalled);

    // A bad commit: the apply is rejected; the chart built from a bad index fails to upgrade.
    let failure = Failure::new("Deployment/apps/web dry-run failed: denied");
    let (src, chart) = (
        ("GitRepository", NS, "repo"),
        ("HelmRepository", NS, "charts"),
    );
    let sim = &cluster.sim;
    sim.push_failing(CLUSTER, src, &revision(2), None, &failure)
        .await
        .unwrap();
    sim.push_failing(CLUSTER, chart, "sha256:bad", None, &failure)
        .await
        .unwrap();
    let r = hub
        .report_where("not ready", |r| {
            object(r, "Kustomization", "apps").is_some_and(|o| o.ready == "False")
                && object(r, "HelmRelease", "web").is_some_and(|o| o.ready == "False")
        })
        .await;
    let apps = object(&r, "Kustomization", "apps").unwrap();
    assert_eq!(apps.ready_reason, "ReconciliationFailed");
    assert_eq!(
        apps.ready_message,
        "Deployment/apps/web dry-run failed: denied"
    );
    assert_eq!(apps.last_attempted_revision, revision(2));
    assert_eq!(apps.last_applied_revision, revision(1), "not applied");
    assert_eq!(apps.newest_source_revision, revision(2));
    let web = object(&r, "HelmRelease", "web").unwrap();
    assert_eq!(web.ready_reason, "UpgradeFailed");
    assert_eq!(web.last_attempted_revision, "1.0.1");
    assert_eq!(
        web.last_applied_revision, "1.0.0",
        "the failed upgrade is not applied"
    );
    assert!(
        web.ready_message
            .starts_with("Upgrade of release flux-system/web with chart web@1.0.1 failed"),
        "{}",
        web.ready_message
    );
    // helm-controller gives up (no retries by default): Stalled.
    hub.report_where("stalled", |r| {
        object(r, "HelmRelease", "web").is_some_and(|o| o.stalled)
    })
    .await;

    // Good revisions recover both.
    push(&cluster, "repo", &revision(3)).await;
    push_kind(&cluster, "HelmRepository", "charts", "sha256:good").await;
    let r = hub
        .report_where("recovered", |r| {
            object(r, "Kustomization", "apps")
                .is_some_and(|o| o.ready == "True" && o.last_applied_revision == revision(3))
                && object(r, "HelmRelease", "web")
                    .is_some_and(|o| o.ready == "True" && o.last_applied_revision == "1.0.2")
        })
        .await;
    assert!(!object(&r, "HelmRelease", "web").unwrap().stalled);
    spoke.stop().await;
}
