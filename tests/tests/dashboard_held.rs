//! Held objects inside Kustomizations (`mode: holdObjects`) in the dashboard,
//! in headless Chromium against a real hub process: the fleet grid shows which
//! clusters hold objects (a badge with the counts, from
//! `GET /api/v1/dashboard/fleet`), and a cluster page lists them and follows
//! them live, beside its *Local gates* section (Gate objects made in the
//! cluster: enforced or why not, state, why). Screenshots go to
//! target/test-output/dashboard/.

#[macro_use]
mod dashboard_support;

use dashboard_support::spoke::{FakeSpoke, object};
use dashboard_support::{ADMIN_TOKEN, Hub, WAIT};
use fleetgate_proto::v1 as pb;
use serde_json::{Value, json};

/// The fleet grid's row of `cluster`, as the dashboard reads it, once `pred`
/// holds (the hub stores a spoke's report asynchronously; bounded polling).
async fn fleet_row(hub: &Hub, cluster: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let start = std::time::Instant::now();
    loop {
        let grid = hub
            .call(ADMIN_TOKEN, "GET", "/api/v1/dashboard/fleet", None)
            .await;
        let row = grid["clusters"]
            .as_array()
            .and_then(|rows| rows.iter().find(|r| r["name"] == cluster))
            .cloned()
            .unwrap_or_else(|| panic!("{cluster} not in the grid: {grid}"));
        if pred(&row) {
            return row;
        }
        assert!(start.elapsed() < WAIT, "grid row never matched: {row}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

browser_test!(cluster_page_lists_held_objects_live, |b| {
    let hub = Hub::start("held-objects").await;
    let token = hub.cluster("prod-1", json!({"env": "prod"})).await;
    hub.gate(json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": "nginx-window"},
        "spec": {
            "clusters": {"names": ["prod-1"]},
            "mode": "holdObjects",
            "targets": {"kinds": ["Kustomization"], "names": ["apps"]},
            "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}]},
            "default": "closed"
        }
    }))
    .await;
    let spoke = FakeSpoke::connect(hub.grpc_port, "prod-1", &token).await;
    let held = |name: &str, by: &[&str], person: bool| pb::HeldObjectStatus {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: "nginx".into(),
        name: name.into(),
        kustomization_namespace: "flux-system".into(),
        kustomization_name: "apps".into(),
        gates: vec!["nginx-window".into()],
        held_by: by.iter().map(|s| s.to_string()).collect(),
        held_by_person: person,
        held_since_revision: "main@sha1:1111".into(),
        held_since: "2026-11-24T10:00:00Z".into(),
        newer_revision_applied: !by.is_empty(),
        not_permitted: false,
        ..Default::default()
    };
    // HoldNotPermitted: a kind the spoke's --held-kinds does not enable.
    let statefulset = pb::HeldObjectStatus {
        kind: "StatefulSet".into(),
        not_permitted: true,
        held_since_revision: String::new(),
        held_since: String::new(),
        ..held("web", &[], false)
    };
    let apps = object("Kustomization", "flux-system", "apps", &[], false);
    // Two Gate objects made in the cluster: one enforced and closed by its
    // deny window, one the hub's setting leaves unenforced.
    let local = |name: &str, enforced: bool| pb::LocalGateStatus {
        name: name.into(),
        enforced,
        open: false,
        reason: if enforced { "DenyWindow" } else { "" }.into(),
        message: if enforced { "deny window 'friday'" } else { "" }.into(),
        next_transition: None,
        governed: 2,
        held: u32::from(enforced),
        ready: if enforced { "True" } else { "False" }.into(),
        ready_reason: if enforced { "Enforced" } else { "NotEnforced" }.into(),
        ready_message: if enforced {
            "gate in force"
        } else {
            "hub setting --local-gates=ignore"
        }
        .into(),
    };
    spoke
        .report_full(
            0,
            vec![apps.clone()],
            vec![
                held("nginx", &["nginx-window"], false),
                held("legacy", &[], true),
                statefulset,
            ],
            vec![local("git-freeze", true), local("lab-only", false)],
        )
        .await;
    // The fleet grid's data: the cluster's held-object counts.
    let row = fleet_row(&hub, "prod-1", |r| r["heldObjects"] != 0).await;
    assert_eq!(
        (
            row["heldObjects"].clone(),
            row["heldObjectsWaiting"].clone(),
            row["heldObjectsByPerson"].clone()
        ),
        (json!(1), json!(1), json!(1)),
        "{row}"
    );
    assert_eq!(row["heldObjectsNotPermitted"], json!(1), "{row}");
    let vic = hub.token("vic", "viewer").await;
    b.sign_in(&hub.base, &vic).await;
    // The fleet grid shows that prod-1 holds objects, linking to its page.
    let badge = "document.querySelector('#fleet-grid a.held-objects[href=\"#/clusters/prod-1\"]')";
    b.wait_js(
        &format!("{badge}?.dataset.heldObjects === '1'"),
        "held-objects badge",
    )
    .await;
    let text = b.eval(&format!("{badge}.textContent")).await;
    assert_eq!(text, json!("⏸ 1 held +1"), "1 by fleetgate, 1 by a person");
    assert!(
        b.eval(&format!("{badge}.title"))
            .await
            .to_string()
            .contains("1 with changes waiting"),
    );
    // ... and warns that a gate selects objects the spoke may not hold.
    let warn = "document.querySelector('#fleet-grid a.not-permitted[href=\"#/clusters/prod-1\"]')";
    assert_eq!(
        b.eval(&format!("{warn}?.dataset.notPermitted")).await,
        json!("1")
    );
    assert_eq!(
        b.eval(&format!("{warn}.textContent")).await,
        json!("⚠ 1 not holdable")
    );
    b.screenshot("fleet-held-objects").await;
    b.route("#/clusters/prod-1").await;
    b.wait_page("cluster").await;
    b.wait_live().await;
    let row = |name: &str| {
        format!(
            "(document.querySelector('#held-objects tr[data-object=\"Deployment/nginx/{name}\"]') || {{}}).textContent"
        )
    };
    b.wait_js(
        &format!("({}||'').includes('nginx-window')", row("nginx")),
        "held Deployment row",
    )
    .await;
    let text = b.eval(&row("nginx")).await.to_string();
    for cell in ["flux-system/apps", "main@sha1:1111", "yes"] {
        assert!(text.contains(cell), "{cell} missing in {text}");
    }
    assert!(
        b.eval(&row("legacy"))
            .await
            .to_string()
            .contains("by a person"),
        "a person's mark is shown as such"
    );
    let sts = b
        .eval("(document.querySelector('#held-objects tr[data-object=\"StatefulSet/nginx/web\"]') || {}).textContent")
        .await
        .to_string();
    assert!(sts.contains("not permitted (--held-kinds)"), "{sts}");
    let warning = b
        .eval("(document.querySelector('#hold-not-permitted') || {}).textContent")
        .await
        .to_string();
    assert!(
        warning.contains("HoldNotPermitted: 1 object(s)"),
        "{warning}"
    );
    assert_eq!(
        // The column by its header, so a column added before it does not move the check.
        b.eval(
            "(() => { const t = document.querySelector('#cluster-gates'); \
             const i = [...t.querySelectorAll('thead th')].findIndex((th) => th.textContent === 'Held objects'); \
             return t.querySelector('tr[data-gate=\"nginx-window\"]').children[i].textContent; })()"
        )
        .await,
        json!("1")
    );
    // The Local gates section: enforced or why not, state, why, held.
    let local_row = |name: &str, cell: &str| {
        format!(
            "(document.querySelector('#local-gates tr[data-local-gate=\"{name}\"] {cell}') || {{}}).textContent"
        )
    };
    assert_eq!(
        b.eval("document.querySelector('#local-gates-card h2').textContent")
            .await,
        json!("Local gates (2; 1 enforced)")
    );
    assert_eq!(
        b.eval(&local_row("git-freeze", ".enforced")).await,
        json!("yes")
    );
    // Badges carry an icon: a closed gate holding something "‖ closed".
    let state = b.eval(&local_row("git-freeze", ".state")).await;
    assert!(
        state.as_str().is_some_and(|s| s.ends_with("closed")),
        "{state}"
    );
    assert_eq!(
        b.eval(&local_row("git-freeze", ".reason")).await,
        json!("DenyWindow: deny window 'friday'")
    );
    assert_eq!(
        b.eval(&local_row("lab-only", ".enforced")).await,
        json!("ℹ no (NotEnforced)")
    );
    assert_eq!(
        b.eval(&local_row("lab-only", ".reason")).await,
        json!("hub setting --local-gates=ignore")
    );
    b.screenshot("cluster-held-objects").await;

    // The gate opens on the cluster: the spoke releases the Deployment and the
    // page follows the heldObjects event without a reload.
    spoke
        .report_held(
            vec![apps],
            vec![held("nginx", &[], false), held("legacy", &[], true)],
        )
        .await;
    b.wait_js(
        &format!("!({}||'').includes('nginx-window')", row("nginx")),
        "released Deployment row",
    )
    .await;
    assert!(
        b.eval("document.querySelector('#held-objects-card h2').textContent")
            .await
            .to_string()
            .contains("1 held of 2"),
    );
    let row = fleet_row(&hub, "prod-1", |r| r["heldObjects"] == 0).await;
    assert_eq!(row["heldObjectsByPerson"], json!(1), "{row}");
});
