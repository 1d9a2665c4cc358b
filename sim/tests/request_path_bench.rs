//! A throughput probe of the simulator's per-request path for the seeded (built-in) kinds:
//! GETs, merge patches and lists of Kustomizations over HTTP from 8 concurrent clients,
//! printing requests per second. Not a test of speed (it asserts only that requests
//! succeed); run it by hand to compare builds:
//! `cargo test --release --workspace --test request_path_bench -- --ignored --nocapture`

mod common;

use std::time::{Duration, Instant};

use common::{CLUSTER, start_default};

const CLIENTS: usize = 8;
const PER_CLIENT: usize = 500;

async fn run(
    base: &str,
    what: &str,
    make: impl Fn(&reqwest::Client, usize) -> reqwest::RequestBuilder + Clone + Send + 'static,
) {
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let make = make.clone();
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            for i in 0..PER_CLIENT {
                let r = make(&http, c * PER_CLIENT + i)
                    .send()
                    .await
                    .expect("request");
                assert!(r.status().is_success(), "{}", r.status());
                r.bytes().await.expect("body");
            }
        }));
    }
    for t in tasks {
        t.await.expect("client");
    }
    let n = (CLIENTS * PER_CLIENT) as f64;
    let secs = started.elapsed().as_secs_f64();
    println!("{what:<28} {:>8.0} req/s  ({n} requests, {base})", n / secs);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a benchmark: run by hand with --ignored --nocapture"]
async fn request_path_throughput() {
    let sim = start_default().await;
    sim.seed_fleet(10).await.unwrap();
    let base = sim.url(CLUSTER).unwrap();
    let item = format!(
        "{base}/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/apps-003"
    );
    let list = format!("{base}/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations");
    tokio::time::sleep(Duration::from_millis(300)).await; // let the seeded fleet settle
    let get = item.clone();
    run(&base, "GET kustomization", move |h, _| h.get(&get)).await;
    let patch = item.clone();
    run(&base, "PATCH (merge) kustomization", move |h, i| {
        h.patch(&patch)
            .header("Content-Type", "application/merge-patch+json")
            .body(format!(
                r#"{{"metadata":{{"labels":{{"n":"{}"}}}}}}"#,
                i % 7
            ))
    })
    .await;
    run(&base, "LIST kustomizations", move |h, _| h.get(&list)).await;
    sim.shutdown().await;
}
