//! Gate objects made in the cluster beside the hub's gates on a hub-connected
//! spoke: ignored (Ready=False/NotEnforced naming the hub setting) until the
//! hub's snapshot says `local_gates_enforced`, then enforced together with the
//! hub's gates (an object is held while any gate governing it is closed) and
//! reported to the hub; a hub gate of the same name wins (NameConflict); an
//! invalid edit keeps the last valid version, also after a restart with the
//! hub unreachable.

mod support;

use fleetgate_proto::v1 as pb;
use support::*;

const LOCAL: &str = "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: git-freeze}\nspec:\n  clusters: {selector: {}}\n  targets: {kinds: [Kustomization], names: [apps]}\n  default: closed\n";

fn with_local(mut s: pb::Snapshot, enforced: bool) -> pb::Snapshot {
    s.local_gates_enforced = enforced;
    s
}

fn local_gate<'a>(r: &'a pb::StatusReport, name: &str) -> Option<&'a pb::LocalGateStatus> {
    r.local_gates.iter().find(|g| g.name == name)
}

#[tokio::test]
async fn local_gates_coexist_with_the_hubs_when_the_hub_enforces_them() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;
    create(&cluster, kustomization("web", "repo", false)).await;
    let mut hub = FakeHub::start().await;
    let hub_gate = || gate_named("release", "suspend", &["web", "apps"], "open");
    // What a hub that predates the setting sends: local gates ignored.
    hub.set(with_local(snapshot(1, vec![hub_gate()], vec![]), false));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    let k = Kubectl::new(&cluster);
    k.apply(LOCAL).await;
    let g = wait_gate(&cluster.client, "git-freeze", "not enforced", |o| {
        condition(o, "Ready", "reason") == Some("NotEnforced")
    })
    .await;
    assert!(
        condition(&g, "Ready", "message")
            .unwrap_or_default()
            .contains("--local-gates"),
        "the message names the hub setting: {g:?}"
    );
    let r = hub
        .report_where("git-freeze reported, not enforced", |r| {
            local_gate(r, "git-freeze").is_some_and(|g| !g.enforced)
        })
        .await;
    let reported = local_gate(&r, "git-freeze").unwrap();
    assert_eq!(
        (reported.ready.as_str(), reported.ready_reason.as_str()),
        ("False", "NotEnforced")
    );
    assert!(
        local_gate(&r, "release").is_none(),
        "the hub's gates are not local"
    );
    let ks = api(&cluster.client, "Kustomization")
        .get("apps")
        .await
        .unwrap();
    assert!(!suspended(&ks), "an ignored local gate holds nothing");

    // The hub enforces local gates: the closed local gate holds `apps`
    // (the open hub gate governs it too), `web` stays open.
    hub.set(with_local(snapshot(2, vec![hub_gate()], vec![]), true));
    wait_gate(&cluster.client, "git-freeze", "enforced, closed", |o| {
        condition(o, "Ready", "reason") == Some("Enforced")
            && opened(o) == Some(("False".into(), "Default".into()))
    })
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "held by the local gate",
        suspended,
    )
    .await;
    let r = hub
        .report_where("git-freeze enforced and closed", |r| {
            local_gate(r, "git-freeze").is_some_and(|g| g.enforced && g.governed == 1)
        })
        .await;
    let reported = local_gate(&r, "git-freeze").unwrap();
    assert!(!reported.open);
    assert_eq!(reported.reason, "Default");
    let apps = r.objects.iter().find(|o| o.name == "apps").unwrap();
    assert_eq!(apps.suspended_by, vec!["git-freeze".to_string()]);
    let web = r.objects.iter().find(|o| o.name == "web").unwrap();
    assert!(!web.suspended && web.suspended_by.is_empty());

    // The hub sends a gate of the same name: the hub's wins (it targets only
    // `web` and is open), the local one is not enforced and `apps` resumes.
    hub.set(with_local(
        snapshot(
            3,
            vec![
                hub_gate(),
                gate_named("git-freeze", "suspend", &["web"], "open"),
            ],
            vec![],
        ),
        true,
    ));
    wait_gate(&cluster.client, "git-freeze", "name conflict", |o| {
        condition(o, "Ready", "reason") == Some("NameConflict")
    })
    .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "resumed: the hub's gate of that name wins",
        |o| !suspended(o),
    )
    .await;
    hub.report_where("git-freeze reported as a conflict", |r| {
        local_gate(r, "git-freeze").is_some_and(|g| !g.enforced && g.ready_reason == "NameConflict")
    })
    .await;

    // The hub drops it again; then an invalid edit keeps the last valid
    // version in force.
    hub.set(with_local(snapshot(4, vec![hub_gate()], vec![]), true));
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "held again",
        suspended,
    )
    .await;
    k.ok(&[
        "patch",
        "gate",
        "git-freeze",
        "--type=merge",
        "-p",
        r#"{"spec":{"windows":[{"name":"w","kind":"deny","schedule":"61 * * * *","duration":"1h"}]}}"#,
    ])
    .await;
    wait_gate(
        &cluster.client,
        "git-freeze",
        "invalid, last valid kept",
        |o| {
            condition(o, "Ready", "reason") == Some("InvalidSpec")
                && opened(o) == Some(("False".into(), "Default".into()))
        },
    )
    .await;
    hub.report_where("invalid but still enforced", |r| {
        local_gate(r, "git-freeze").is_some_and(|g| g.enforced && g.ready_reason == "InvalidSpec")
    })
    .await;

    // Offline: the hub is gone and the spoke restarts. The persisted snapshot
    // still carries the last valid version: a person's `flux resume` of
    // `apps` is undone by the new spoke.
    spoke.stop().await;
    let url = hub.url();
    hub.stop().await;
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(url))).await;
    spoke.wait_ready().await;
    set_suspend_by_hand(&cluster.client, "Kustomization", "apps", false).await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "held again offline after a restart",
        suspended,
    )
    .await;
    let mut rx = spoke.ctx().local_gates.subscribe();
    tokio::time::timeout(
        WAIT,
        rx.wait_for(|l| {
            l.iter().any(|g| {
                g.name == "git-freeze" && g.enforced && !g.open && g.ready_reason == "InvalidSpec"
            })
        }),
    )
    .await
    .expect("the restarted spoke evaluates the local gate")
    .expect("spoke running");
    spoke.stop().await;
}
