//! The dashboard's fleet page at fleet scale: the hub's answer to `GET
//! /api/v1/dashboard/fleet` (the first page of 100 rows, then a filtered and ordered page)
//! for 10,000 clusters × 10 gates, as an admin and as a team's viewer. With
//! `--baseline-hub`, an older hub build serves the same database beside this one and
//! answers each request in turn, so the two are compared in one run.

use std::path::Path;
use std::time::{Duration, Instant};

use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{ADMIN, Result, cell, column, load, rounds, stats, timed};
use crate::hub::Hub;
use crate::seed;

/// The gate every cluster's objects report under.
const GATE: &str = "dash-all";

/// Ten gates of the shapes a fleet has: every cluster, by env, region or team, with
/// weekly windows, a freeze, and closed-by-default gates opened by people.
fn gates() -> Vec<Value> {
    let gate = |name: &str, clusters: Value, default: &str, windows: Value| {
        json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate",
            "metadata": {"name": name},
            "spec": {
                "clusters": clusters,
                "targets": {"kinds": ["Kustomization", "HelmRelease"]},
                "default": default, "timeZone": "Europe/Berlin", "windows": windows,
            }
        })
    };
    let labels = |k: &str, v: &str| json!({"selector": {"matchLabels": {k: v}}});
    let weekdays = json!([{"name": "weekdays", "kind": "allow", "schedule": "0 8 * * MON-THU", "duration": "9h"}]);
    let friday =
        json!([{"name": "friday", "kind": "deny", "schedule": "0 0 * * FRI", "duration": "72h"}]);
    let freeze = json!([{"name": "year-end", "kind": "deny", "start": "2026-12-20T00:00:00", "end": "2027-01-04T00:00:00"}]);
    vec![
        gate(GATE, json!({"selector": {}}), "open", json!([])),
        gate(
            "prod-hours",
            labels("env", "prod"),
            "closed",
            weekdays.clone(),
        ),
        gate("dev-hours", labels("env", "dev"), "closed", weekdays),
        gate(
            "no-friday",
            json!({"selector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}}),
            "open",
            friday.clone(),
        ),
        gate("year-end", json!({"selector": {}}), "open", freeze),
        gate("eu-approval", labels("region", "eu"), "closed", json!([])),
        gate("us-friday", labels("region", "us"), "open", friday.clone()),
        gate("ap-friday", labels("region", "ap"), "open", friday),
        gate(
            "team-zero",
            json!({"selector": {"matchExpressions": [{"key": "team", "operator": "In", "values": ["t000", "t001", "t002"]}]}}),
            "closed",
            json!([]),
        ),
        gate(
            "not-team-zero",
            json!({"selector": {"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["t000"]}]}}),
            "open",
            json!([]),
        ),
    ]
}

/// The pages timed: the first page, and a filtered, attention-ordered one.
const PAGES: [&str; 2] = [
    "/api/v1/dashboard/fleet?limit=100",
    "/api/v1/dashboard/fleet?limit=100&state=closed&sort=attention&filter=region%3Deu",
];

/// One reader's timings of [`PAGES`] on one hub.
type Timings = [Vec<Duration>; 2];

async fn time(hub: &Hub, token: &str, path: &str, expect: usize) -> Result<Duration> {
    let (page, took) = timed(hub.call(token, Method::GET, path, None)).await?;
    let seen = page["counts"]["clusters"].as_u64().unwrap_or_default();
    if seen != expect as u64 {
        return Err(format!("{path}: the reader saw {seen} clusters, not {expect}").into());
    }
    Ok(took)
}

/// `n` rounds (after one unmeasured) of every page on each hub, in turn.
async fn measure(hubs: &[&Hub], token: &str, n: usize, expect: usize) -> Result<Vec<Timings>> {
    let samples = rounds(n, |round| async move {
        // Per hub, per page.
        let mut took = vec![[Duration::ZERO; PAGES.len()]; hubs.len()];
        for (i, path) in PAGES.iter().enumerate() {
            // Alternate which hub goes first, so neither always finds the caches warm.
            for k in 0..hubs.len() {
                let h = (k + round) % hubs.len();
                took[h][i] = time(hubs[h], token, path, expect).await?;
            }
        }
        Ok(took)
    })
    .await?;
    Ok((0..hubs.len())
        .map(|h| {
            let of_hub: Vec<_> = samples.iter().map(|s| s[h]).collect();
            std::array::from_fn(|i| column(&of_hub, i))
        })
        .collect())
}

pub async fn run(
    bin: &Path,
    baseline: Option<&Path>,
    clusters: usize,
    rounds: usize,
) -> Result<()> {
    let hub = Hub::start(bin).await?;
    for g in gates() {
        hub.post("/api/v1/gates", g).await?;
    }
    let pool = hub.pool().await?;
    let t = Instant::now();
    seed::clusters(&pool, 0, clusters, 100, 5, GATE).await?;
    println!(
        "dashboard: seeded {clusters} clusters × {} gates (5 objects each) in {:.1} s",
        gates().len(),
        t.elapsed().as_secs_f64()
    );
    // Some clusters opened by people: overrides on a team and on a region's clusters.
    hub.post(
        "/api/v1/gates/team-zero/open",
        json!({"for": "2h", "reason": "dashboard bench", "clusters": {"selector": {"matchLabels": {"team": "t001"}}}}),
    )
    .await?;
    hub.post(
        "/api/v1/gates/eu-approval/open",
        json!({"for": "2h", "reason": "dashboard bench", "clusters": {"names": [seed::name(0), seed::name(3)]}}),
    )
    .await?;
    let created = hub
        .post(
            "/api/v1/tokens",
            json!({"name": "team-t000", "role": "viewer",
                   "scope": {"clusters": {"selector": {"matchLabels": {"team": "t000"}}}}}),
        )
        .await?;
    let team = created["secret"]
        .as_str()
        .ok_or("no token secret")?
        .to_string();
    let base = match baseline {
        Some(b) => Some(hub.beside(b).await?),
        None => None,
    };
    let mut hubs = vec![&hub];
    hubs.extend(base.as_ref());
    let admin = measure(&hubs, ADMIN, rounds, clusters).await?;
    let scoped = measure(&hubs, &team, rounds, 100).await?;

    println!(
        "dashboard fleet page, {clusters} clusters × 10 gates ({rounds} rounds; load average {}):",
        load()
    );
    for (who, t) in [("admin", &admin), ("team of 100", &scoped)] {
        for (i, path) in PAGES.iter().enumerate() {
            println!("  {who}, GET {path}");
            println!("    this build: {}", cell(&t[0][i]));
            if let Some(b) = t.get(1) {
                println!("    baseline:   {}", cell(&b[i]));
                println!(
                    "    this / baseline (p50): {:.2}x",
                    stats(&t[0][i]).0 / stats(&b[i]).0
                );
            }
        }
    }
    let inproc_admin = crate::inproc::measure(&pool, ADMIN, rounds.min(5)).await?;
    crate::inproc::print("admin", &inproc_admin);
    let inproc_team = crate::inproc::measure(&pool, &team, rounds).await?;
    crate::inproc::print("team of 100", &inproc_team);
    pool.close().await;
    Ok(())
}
