//! Dashboard figures (ignored by default; run with `--ignored --nocapture`):
//! the fleet view's render time with 500 clusters × 10 gates, measured in the
//! browser with `performance.now()`, and the screenshots for docs/dashboard.md.

mod dashboard_support;

use dashboard_support::spoke::{FakeSpoke, object};
use dashboard_support::{
    ADMIN_TOKEN, Browser, Hub, SERIAL, TEST_TIMEOUT, browser_binaries, fleet, output_dir,
};
use serde_json::json;

async fn browser() -> Option<Browser> {
    let Some((chromium, driver)) = browser_binaries() else {
        eprintln!("SKIPPED: chromium and chromedriver are not installed");
        return None;
    };
    Some(Browser::start(&chromium, &driver).await)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: prints the fleet view render time (500 clusters x 10 gates)"]
async fn fleet_view_500_clusters_x_10_gates() {
    fleetgate_tests::binaries(&["fleetgate-hub"]);
    let _serial = SERIAL.lock().await;
    let Some(b) = browser().await else { return };
    tokio::time::timeout(TEST_TIMEOUT * 2, async {
        let hub = Hub::start("bench").await;
        let clusters = fleet::seed(&hub, 500, 10).await;
        // A tenth of the fleet with live spokes and held changes.
        let mut spokes = Vec::new();
        for (i, (name, token)) in clusters.iter().enumerate().step_by(10) {
            let s = FakeSpoke::connect(hub.grpc_port, name, token).await;
            s.report(vec![object(
                "Kustomization",
                "apps",
                "web",
                &["business-hours"],
                i % 20 == 0,
            )])
            .await;
            spokes.push(s);
        }
        b.sign_in(&hub.base, ADMIN_TOKEN).await;
        b.wait_js(
            "document.querySelectorAll('#fleet-grid tbody tr').length === 500",
            "500 rows",
        )
        .await;
        let (mut fetch, mut render) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            b.route("#/audit").await;
            b.wait_page("audit").await;
            b.eval("(window.fleetgateTimings = null)").await;
            b.route("#/fleet").await;
            b.wait_page("fleet").await;
            b.wait_js("window.fleetgateTimings", "timings").await;
            let t = b.eval("window.fleetgateTimings").await;
            assert_eq!(t["clusters"], json!(500));
            assert_eq!(t["gates"], json!(10));
            fetch.push(t["fetchMs"].as_f64().unwrap_or_default());
            render.push(t["renderMs"].as_f64().unwrap_or_default());
        }
        let cells = b
            .eval("document.querySelectorAll('#fleet-grid td.cell').length")
            .await;
        assert_eq!(cells, json!(5000));
        b.screenshot("fleet-500x10").await;
        let (f, r) = (median(fetch), median(render));
        println!(
            "dashboard fleet view, 500 clusters x 10 gates (7 runs, median): \
             fetch+parse {f:.0} ms, DOM build+layout {r:.0} ms, total {:.0} ms",
            f + r
        );
        drop(spokes);
    })
    .await
    .expect("benchmark timed out");
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "writes the docs/dashboard.md screenshots to target/test-output/dashboard/readme-*.png"]
async fn readme_screenshot() {
    fleetgate_tests::binaries(&["fleetgate-hub"]);
    let _serial = SERIAL.lock().await;
    let Some(b) = browser().await else { return };
    tokio::time::timeout(TEST_TIMEOUT, async {
        let hub = Hub::start("readme").await;
        let clusters = fleet::seed(&hub, 30, 8).await;
        let mut spokes = Vec::new();
        for (i, (name, token)) in clusters.iter().enumerate() {
            if i % 11 == 7 {
                continue; // a few spokes are offline
            }
            let s = FakeSpoke::connect(hub.grpc_port, name, token).await;
            // The gate that governs the app on this kind of cluster.
            let (gate, can_hold) = match fleet::cluster(i).1["env"].as_str() {
                Some("prod") => ("business-hours", true),
                Some("staging") => ("staging-nightly", true),
                _ => ("holiday-freeze", false),
            };
            s.report(vec![
                object("Kustomization", "flux-system", "infra", &[gate], false),
                object("HelmRelease", "apps", "checkout", &[gate], can_hold && i % 4 == 0),
            ])
            .await;
            spokes.push(s);
        }
        let alice = hub.token("alice", "operator").await;
        hub.call(
            &alice,
            "POST",
            "/api/v1/gates/no-deploy-friday/open",
            Some(json!({"for": "2h", "reason": "CHG-4711 checkout hotfix", "clusters": {"names": [clusters[0].0, clusters[10].0]}})),
        )
        .await;
        b.sign_in(&hub.base, &alice).await;
        b.wait_live().await;
        b.eval("(document.getElementById('group-by').value = 'env', document.getElementById('group-by').dispatchEvent(new Event('change')))").await;
        b.wait_js("document.querySelector('tr.group-row')", "groups").await;
        b.screenshot("readme-fleet").await;
        b.route("#/gates/business-hours").await;
        b.wait_page("gate").await;
        b.screenshot("readme-gate").await;
        b.route("#/gates/staging-nightly").await;
        b.wait_page("gate").await;
        b.screenshot("readme-gate-nightly").await;
        b.route("#/audit").await;
        b.wait_page("audit").await;
        b.screenshot("readme-audit").await;
        b.route(&format!("#/clusters/{}", clusters[0].0)).await;
        b.wait_page("cluster").await;
        b.screenshot("readme-cluster").await;
        println!("screenshots in {}", output_dir().display());
        drop(spokes);
    })
    .await
    .expect("screenshot run timed out");
    b.close().await;
}
