//! Dashboard figures (ignored by default; run with `--ignored --nocapture`):
//! the fleet view's render time with 500 clusters × 10 gates and its time to usable with
//! 10,000 clusters × 10 gates, measured in the browser with `performance.now()`, and the
//! screenshots for docs/dashboard.md.

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
            "document.querySelectorAll('#fleet-grid tbody tr').length === 100",
            "the first page of 100 rows",
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
            assert_eq!((&t["clusters"], &t["total"]), (&json!(100), &json!(500)));
            assert_eq!(t["gates"], json!(10));
            fetch.push(t["fetchMs"].as_f64().unwrap_or_default());
            render.push(t["renderMs"].as_f64().unwrap_or_default());
        }
        let cells = b
            .eval("document.querySelectorAll('#fleet-grid td.cell').length")
            .await;
        assert_eq!(cells, json!(1000));
        b.screenshot("fleet-500x10").await;
        let (f, r) = (median(fetch), median(render));
        println!(
            "dashboard fleet view, 500 clusters x 10 gates, first page of 100 (7 runs, median): \
             fetch+parse {f:.0} ms, DOM build+layout {r:.0} ms, total {:.0} ms",
            f + r
        );
        drop(spokes);
    })
    .await
    .expect("benchmark timed out");
    b.close().await;
}

/// The machine's 1-minute load average (the machine is shared: say how busy it was).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// From setting `#/fleet` to the first page's rows drawn and the next frame painted, in the
/// page's own clock (ms).
const TIME_TO_USABLE: &str = r#"
const done = arguments[arguments.length - 1];
const t0 = performance.now();
location.hash = '#/fleet';
(function poll() {
  const ready = document.body.dataset.page === 'fleet'
    && document.getElementById('main').dataset.ready === '1'
    && document.querySelector('#fleet-grid tbody tr');
  if (ready) requestAnimationFrame(() => done(performance.now() - t0));
  else setTimeout(poll, 2);
})();
"#;

/// What the page asked for before paging: every row of the fleet (fetch and JSON parse).
const WHOLE_GRID: &str = r#"
const done = arguments[arguments.length - 1];
const t0 = performance.now();
fetch('/api/v1/dashboard/fleet', {headers: {Authorization: `Bearer ${sessionStorage.getItem('fleetgate.token')}`}})
  .then((r) => r.json())
  .then((d) => done([performance.now() - t0, d.clusters.length]));
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: prints the fleet page's time to usable at 10,000 clusters x 10 gates"]
async fn fleet_page_10000_clusters_time_to_usable() {
    fleetgate_tests::binaries(&["fleetgate-hub"]);
    let _serial = SERIAL.lock().await;
    let Some(b) = browser().await else { return };
    tokio::time::timeout(TEST_TIMEOUT * 2, async {
        let hub = Hub::start("bench10k").await;
        fleet::seed_bulk(&hub, 10_000, 10).await;
        b.sign_in(&hub.base, ADMIN_TOKEN).await;
        b.wait_js(
            "document.querySelectorAll('#fleet-grid tbody tr').length === 100",
            "the first page of 100 rows",
        )
        .await;
        let (mut usable, mut fetch, mut render) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..7 {
            b.route("#/audit").await;
            b.wait_page("audit").await;
            b.eval("(window.fleetgateTimings = null)").await;
            let ms = b.eval_async("time to usable", TIME_TO_USABLE).await;
            usable.push(ms.as_f64().unwrap_or_default());
            b.wait_js("window.fleetgateTimings", "timings").await;
            let t = b.eval("window.fleetgateTimings").await;
            assert_eq!((&t["clusters"], &t["fleet"]), (&json!(100), &json!(10_000)));
            fetch.push(t["fetchMs"].as_f64().unwrap_or_default());
            render.push(t["renderMs"].as_f64().unwrap_or_default());
        }
        // The next page and a server-side filter, as a person would use them.
        let t0 = std::time::Instant::now();
        b.click("#page-next").await;
        b.wait_js(
            "document.getElementById('page-info').textContent.includes('101–200 of 10000')",
            "the second page",
        )
        .await;
        let next = t0.elapsed();
        let rows = b
            .eval("document.querySelectorAll('#fleet-grid tbody tr').length")
            .await;
        assert_eq!(rows, json!(100), "rendered rows are bounded by the page");
        let whole = b.eval_async("the whole grid", WHOLE_GRID).await;
        b.screenshot("fleet-10000x10").await;
        let max = usable.iter().copied().fold(0.0, f64::max);
        let (u, f, r) = (median(usable), median(fetch), median(render));
        println!(
            "dashboard fleet page, 10,000 clusters x 10 gates, 100 rows a page (7 runs): \
             time to usable median {u:.0} ms, max {max:.0} ms (fetch+parse {f:.0} ms, DOM build+layout \
             {r:.0} ms); next page {:.0} ms (as polled); the whole grid's fetch+parse, as the page \
             asked before paging: {:.0} ms for {} rows; load average {}",
            next.as_secs_f64() * 1000.0,
            whole[0].as_f64().unwrap_or_default(),
            whole[1],
            load_average()
        );
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
