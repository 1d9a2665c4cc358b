//! The dashboard in headless Chromium against a real hub process: an
//! operator opens a gate and sees the grid and the audit log change, a viewer
//! gets no action buttons, and a change made through REST appears live —
//! also after the hub restarted. Screenshots go to target/test-output/dashboard/.

#[macro_use]
mod dashboard_support;

use dashboard_support::spoke::FakeSpoke;
use dashboard_support::{ADMIN_TOKEN, Hub, TEARDOWN, seed_small};
use serde_json::{Value, json};

browser_test!(operator_opens_a_gate_and_sees_grid_and_audit, |b| {
    let hub = Hub::start("operator").await;
    seed_small(&hub).await;
    let alice = hub.token("alice", "operator").await;
    b.sign_in(&hub.base, &alice).await;
    // The token stays in this tab's session storage: not in the URL, no cookie.
    assert!(!b.eval("location.href").await.to_string().contains(&alice));
    assert_eq!(b.eval("document.cookie").await, json!(""));
    assert_eq!(
        b.eval("sessionStorage.getItem('fleetgate.token')").await,
        json!(alice)
    );

    // The approval gate is closed on both prod clusters; staging is not governed.
    b.wait_eq(&Browser::cell("sre-approval", "prod-eu-1"), "closed")
        .await;
    assert_eq!(
        b.eval(&Browser::cell("sre-approval", "staging-1")).await,
        json!("na")
    );
    assert_eq!(
        b.eval("document.getElementById('me').dataset.role").await,
        json!("operator")
    );
    b.wait_live().await;
    b.screenshot("fleet").await;

    // Open it for one hour with a reason, through the confirmation dialog.
    b.route("#/gates/sre-approval").await;
    b.wait_page("gate").await;
    b.wait_js(
        "document.querySelector('svg.timeline .band.closed')",
        "timeline",
    )
    .await;
    b.screenshot("gate").await;
    b.click("#open-gate").await;
    b.wait_js(
        "document.getElementById('dialog').open",
        "confirmation dialog",
    )
    .await;
    b.fill("#dlg-duration", "1h").await;
    b.fill("#dlg-reason", "CHG-1234 payments hotfix").await;
    b.screenshot("gate-open-dialog").await;
    b.click("#dlg-confirm").await;

    // Visible at once on the gate page: the override and the open clusters.
    b.wait_js("!document.getElementById('dialog').open", "dialog closed")
        .await;
    b.wait_js(
        "document.querySelector('#overrides-table')?.textContent.includes('CHG-1234 payments hotfix')",
        "override listed",
    )
    .await;
    b.wait_js(
        "document.getElementById('gate-open')?.textContent === '2'",
        "both clusters open",
    )
    .await;
    b.screenshot("gate-opened").await;

    // The grid cell changed.
    b.route("#/fleet").await;
    b.wait_page("fleet").await;
    b.wait_eq(&Browser::cell("sre-approval", "prod-eu-1"), "open")
        .await;
    assert_eq!(
        b.eval(&Browser::cell("sre-approval", "prod-us-1")).await,
        json!("open")
    );
    let title = b
        .eval(
            "(c => (c.dispatchEvent(new MouseEvent('mouseover', {bubbles: true})), c.title))\
             (document.querySelector('td[data-gate=\"sre-approval\"][data-cluster=\"prod-eu-1\"]'))",
        )
        .await;
    assert!(
        title.as_str().unwrap_or_default().contains("Next change")
            && title.as_str().unwrap_or_default().contains("CHG-1234"),
        "hover text: {title}"
    );

    // The audit log shows who did it and why.
    b.route("#/audit").await;
    b.wait_page("audit").await;
    b.wait_js(
        "[...document.querySelectorAll('#audit-table tr[data-action=\"override.open\"]')]\
         .some(r => r.textContent.includes('alice') && r.textContent.includes('CHG-1234 payments hotfix'))",
        "audit entry",
    )
    .await;
    b.screenshot("audit").await;
    // Filtering by actor leaves only alice's entries.
    b.fill("#audit-actor", "alice").await;
    b.click("#audit-filters button[type='submit']").await;
    b.wait_js(
        "(rows => rows.length === 1 && rows[0].dataset.action === 'override.open')\
         (document.querySelectorAll('#audit-table tbody tr'))",
        "audit filtered to alice",
    )
    .await;

    // And the hub agrees: one live open override by alice for about an hour.
    let live = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/overrides?gate=sre-approval",
            None,
        )
        .await;
    let items = live["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 1, "{live}");
    assert_eq!(items[0]["actor"], json!("alice"));
    assert_eq!(items[0]["state"], json!("open"));
    let start =
        chrono::DateTime::parse_from_rfc3339(items[0]["startsAt"].as_str().unwrap()).unwrap();
    let end =
        chrono::DateTime::parse_from_rfc3339(items[0]["expiresAt"].as_str().unwrap()).unwrap();
    assert_eq!((end - start).num_minutes(), 60);

    // The cluster page lists the gate and the override; cancel it from there.
    b.route("#/clusters/prod-eu-1").await;
    b.wait_page("cluster").await;
    b.wait_js(
        "document.querySelector('#cluster-gates tr[data-gate=\"sre-approval\"]')",
        "cluster gates",
    )
    .await;
    b.screenshot("cluster").await;
    b.click("button[data-action='cancel']").await;
    b.fill("#dlg-reason", "hotfix rolled out").await;
    b.click("#dlg-confirm").await;
    b.wait_js(
        "!document.querySelector(\"button[data-action='cancel']\")",
        "override gone",
    )
    .await;
    // Closed again by sre-approval, which has no windows: the cluster's next change is none,
    // whatever the other gates' next transitions (those stay in the gate rows).
    b.wait_js(
        "document.querySelector('[data-fact=\"Next change\"] .fact-value')?.textContent === '—'",
        "no next change for the cluster",
    )
    .await;
    let live = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/overrides?gate=sre-approval",
            None,
        )
        .await;
    assert_eq!(live["items"], json!([]), "{live}");
});

browser_test!(requests_made_in_a_cluster_are_listed_and_cancelled, |b| {
    let hub = Hub::start("local-requests").await;
    seed_small(&hub).await;
    // A prod cluster whose spoke reports a close request made there with
    // kubectl (by alice) on the approval gate.
    let token = hub.cluster("edge-1", json!({"env": "prod"})).await;
    let spoke = FakeSpoke::connect(hub.grpc_port, "edge-1", &token).await;
    spoke
        .request("sre-approval", "closed", "alice", "incident 7")
        .await;
    b.sign_in(&hub.base, ADMIN_TOKEN).await;
    b.route("#/clusters/edge-1").await;
    b.wait_page("cluster").await;
    // Reported asynchronously: the page shows it once recorded (live refresh).
    b.wait_js(
        "document.querySelector('#local-requests tr[data-gate=\"sre-approval\"] .requested-by')?.textContent === 'alice'",
        "the request listed with its Kubernetes user",
    )
    .await;
    b.screenshot("cluster-local-requests").await;
    b.click("#local-requests button[data-action='cancel']")
        .await;
    b.fill("#dlg-reason", "not needed").await;
    b.click("#dlg-confirm").await;
    b.wait_js("!document.querySelector('#local-requests')", "request gone")
        .await;
    let audit = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/audit?action=override.cancel",
            None,
        )
        .await;
    assert_eq!(audit["items"].as_array().map(Vec::len), Some(1), "{audit}");
    drop(spoke);
});

browser_test!(viewer_sees_no_action_buttons, |b| {
    let hub = Hub::start("viewer").await;
    seed_small(&hub).await;
    // An override exists, so the viewer would see a cancel button if any.
    hub.call(
        ADMIN_TOKEN,
        "POST",
        "/api/v1/gates/sre-approval/open",
        // Markup in a reason must show as text, never run.
        Some(
            json!({"for": "2h", "reason": "release train <img src=x onerror=\"window.__xss=1\">"}),
        ),
    )
    .await;
    let vic = hub.token("vic", "viewer").await;
    // A wrong token is refused on the sign-in page.
    b.goto(&hub.base).await;
    b.wait_page("signin").await;
    b.fill("#token", "fga_not-a-real-token").await;
    b.click("#signin-submit").await;
    b.wait_js(
        "document.getElementById('signin-error').textContent.includes('not accepted')",
        "sign-in error",
    )
    .await;
    // Chromium logs the refused request; nothing else may be in the console.
    b.expect_console(&["401"], true).await;
    b.sign_in(&hub.base, &vic).await;
    assert_eq!(
        b.eval("document.getElementById('me').dataset.role").await,
        json!("viewer")
    );
    for page in ["#/gates/sre-approval", "#/clusters/prod-eu-1"] {
        b.route(page).await;
        b.wait_page(if page.contains("gates") {
            "gate"
        } else {
            "cluster"
        })
        .await;
        b.wait_js(
            "document.body.textContent.includes('release train <img src=x')",
            "override shown",
        )
        .await;
        assert_eq!(
            b.eval("document.querySelectorAll('[data-action]:is(button)').length")
                .await,
            json!(0),
            "viewer sees action buttons on {page}"
        );
    }
    b.screenshot("viewer-gate").await;
    assert_eq!(
        b.eval("[window.__xss, document.querySelectorAll('img[src=\"x\"]').length]")
            .await,
        json!([null, 0])
    );

    // Signing out forgets the token.
    b.click("#signout").await;
    b.wait_page("signin").await;
    assert_eq!(
        b.eval("sessionStorage.getItem('fleetgate.token')").await,
        json!(null)
    );
});

browser_test!(rest_change_appears_live_and_survives_hub_restart, |b| {
    let mut hub = Hub::start("live").await;
    seed_small(&hub).await;
    let alice = hub.token("alice", "operator").await;
    b.sign_in(&hub.base, &alice).await;
    b.wait_live().await;
    let cell = Browser::cell("sre-approval", "prod-us-1");
    b.wait_eq(&cell, "closed").await;
    // A marker that a reload would wipe.
    b.eval("(window.__noReload = 42)").await;

    let open =
        |reason: &str| json!({"for": "1h", "reason": reason, "clusters": {"names": ["prod-us-1"]}});
    hub.call(
        ADMIN_TOKEN,
        "POST",
        "/api/v1/gates/sre-approval/open",
        Some(open("from the CLI")),
    )
    .await;
    b.wait_eq(&cell, "open").await;
    assert_eq!(
        b.eval("window.__noReload").await,
        json!(42),
        "the page reloaded"
    );
    assert_eq!(
        b.eval(&Browser::cell("sre-approval", "prod-eu-1")).await,
        json!("closed")
    );

    // The hub goes away: the page notices and keeps trying.
    hub.stop().await;
    b.wait_js(
        "document.getElementById('live').dataset.state !== 'live'",
        "stream down",
    )
    .await;
    b.screenshot("live-reconnecting").await;
    hub.restart("live").await;
    b.wait_live().await;
    // The restart may have cut the event stream and refused requests meanwhile: nothing else.
    b.expect_console(&TEARDOWN, false).await;

    // Changes after the restart still arrive without a reload.
    let ovs = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/overrides?gate=sre-approval",
            None,
        )
        .await;
    let id = ovs["items"][0]["id"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_default();
    hub.call(
        ADMIN_TOKEN,
        "DELETE",
        &format!("/api/v1/overrides/{id}?reason=done"),
        None,
    )
    .await;
    b.wait_eq(&cell, "closed").await;
    hub.call(
        ADMIN_TOKEN,
        "POST",
        "/api/v1/gates/sre-approval/open",
        Some(open("second")),
    )
    .await;
    b.wait_eq(&cell, "open").await;
    assert_eq!(
        b.eval("window.__noReload").await,
        json!(42),
        "the page reloaded"
    );
    let _: Value = Value::Null;
});

browser_test!(fleet_filters_group_and_collapse, |b| {
    let hub = Hub::start("filters").await;
    seed_small(&hub).await;
    b.sign_in(&hub.base, ADMIN_TOKEN).await;
    let rows = "document.querySelectorAll('#fleet-grid tbody tr:not(.group-row)').length";
    let set = |id: &str, value: &str| {
        format!(
            "(e => (e.value = {value:?}, e.dispatchEvent(new Event(e.tagName === 'INPUT' ? 'input' : 'change')), true))\
             (document.getElementById({id:?}))"
        )
    };
    b.wait_js(&format!("{rows} === 3"), "three clusters").await;

    // Label filter, then name filter.
    b.eval(&set("filter-text", "region=us")).await;
    b.wait_js(&format!("{rows} === 1"), "one cluster in us")
        .await;
    assert_eq!(
        b.eval(&Browser::cell("sre-approval", "prod-us-1")).await,
        json!("closed")
    );
    b.eval(&set("filter-text", "env!=prod")).await;
    b.wait_js(
        &format!("{rows} === 1 && document.querySelector('td[data-cluster=\"staging-1\"]')"),
        "staging only",
    )
    .await;
    b.eval(&set("filter-text", "")).await;

    // One gate's column only.
    b.eval(&set("filter-gate", "sre-approval")).await;
    b.wait_js(
        "document.querySelectorAll('#fleet-grid thead th').length === 2",
        "one gate column",
    )
    .await;
    b.eval(&set("filter-gate", "")).await;

    // Group by env and collapse prod.
    b.eval(&set("group-by", "env")).await;
    b.wait_js(
        "document.querySelectorAll('tr.group-row').length === 2",
        "two groups",
    )
    .await;
    b.screenshot("fleet-grouped").await;
    b.click("button[data-group='prod']").await;
    b.wait_js(&format!("{rows} === 1"), "prod collapsed").await;
    b.click("button[data-group='prod']").await;
    b.wait_js(&format!("{rows} === 3"), "prod expanded").await;

    // Clicking a cell opens the cluster page.
    b.click("td[data-cluster='staging-1'][data-gate='no-deploy-friday']")
        .await;
    b.wait_page("cluster").await;
    assert_eq!(b.eval("location.hash").await, json!("#/clusters/staging-1"));
});

browser_test!(live_refresh_keeps_the_grid_scrolled, |b| {
    let hub = Hub::start("scroll").await;
    let clusters = dashboard_support::fleet::seed(&hub, 80, 3).await;
    b.sign_in(&hub.base, ADMIN_TOKEN).await;
    b.wait_live().await;
    b.wait_js(
        "document.querySelectorAll('#fleet-grid tbody tr').length === 80",
        "80 rows",
    )
    .await;
    b.eval("(document.getElementById('grid').scrollTop = 600)")
        .await;
    let before = b.eval("document.getElementById('grid').scrollTop").await;
    assert!(
        before.as_f64().unwrap_or_default() > 300.0,
        "grid does not scroll: {before}"
    );
    // The prod cluster lowest in the grid (business-hours governs prod).
    let last = clusters
        .iter()
        .map(|(name, _)| name)
        .filter(|n| n.starts_with("prod-"))
        .max()
        .expect("a prod cluster");
    let cell = Browser::cell("business-hours", last);
    assert_ne!(b.eval(&cell).await, json!(null), "{last} is governed");
    // Open business-hours on it through REST: its cell changes live.
    hub.call(
        ADMIN_TOKEN,
        "POST",
        "/api/v1/gates/business-hours/open",
        Some(json!({"for": "1h", "reason": "hotfix", "clusters": {"names": [last]}})),
    )
    .await;
    b.wait_eq(&cell, "open").await;
    assert_eq!(
        b.eval("document.getElementById('grid').scrollTop").await,
        before
    );
});

browser_test!(cluster_page_shows_flux_ready_with_its_message, |b| {
    let hub = Hub::start("ready").await;
    seed_small(&hub).await;
    let token = hub.cluster("edge-1", json!({"env": "prod"})).await;
    let spoke = dashboard_support::spoke::FakeSpoke::connect(hub.grpc_port, "edge-1", &token).await;
    let healthy =
        dashboard_support::spoke::object("Kustomization", "apps", "api", &["sre-approval"], false);
    // web's newest revision was attempted and failed its health check.
    let failing = fleetgate_proto::v1::ObjectStatus {
        ready: "False".into(),
        ready_reason: "HealthCheckFailed".into(),
        ready_message: "health check failed after 5m: Deployment/apps/web not ready".into(),
        stalled: true,
        generation: 4,
        observed_generation: 3,
        last_attempted_revision: "main@sha1:9be03d7".into(),
        ..dashboard_support::spoke::object("Kustomization", "apps", "web", &["sre-approval"], false)
    };
    spoke.report(vec![healthy, failing]).await;
    b.sign_in(&hub.base, ADMIN_TOKEN).await;
    b.route("#/clusters/edge-1").await;
    b.wait_page("cluster").await;
    let web =
        "document.querySelector('#objects tr[data-object=\"Kustomization/apps/web\"] td.ready')";
    b.wait_js(
        &format!("{web}?.textContent.includes('HealthCheckFailed')"),
        "web's Ready cell",
    )
    .await;
    let text = b.eval(&format!("{web}.textContent")).await;
    let text = text.as_str().unwrap();
    assert!(text.contains("Stalled"), "{text}");
    assert!(text.contains("Deployment/apps/web not ready"), "{text}");
    assert!(
        text.contains("generation 4 not reconciled (observed 3)"),
        "{text}"
    );
    let api = b
        .eval("document.querySelector('#objects tr[data-object=\"Kustomization/apps/api\"] td.ready').textContent")
        .await;
    assert_eq!(api.as_str().map(str::trim), Some("✓ Ready"), "{api}");
    let attempted = b
        .eval("document.querySelector('#objects tr[data-object=\"Kustomization/apps/web\"] td.rev').textContent")
        .await;
    assert!(
        attempted
            .as_str()
            .unwrap()
            .contains("attempted main@sha1:9be03d7"),
        "{attempted}"
    );
    b.screenshot("cluster-ready").await;
    drop(spoke);
});
