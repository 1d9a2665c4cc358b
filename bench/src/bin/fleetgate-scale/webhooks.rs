//! A gate edge at fleet scale reaching webhook receivers: 10 real HTTP receivers, 5 of them
//! subscribed with a cluster selector (one team's clusters each), the others to every
//! cluster. Each round opens a closed gate on every cluster (one `gate.opened` for 10,000
//! clusters) and times it from the REST call to the last receiver's message; then the same
//! for an edge on one cluster of that fleet (routing it must not read the fleet).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::http::StatusCode;
use axum::routing::post;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::common::{ADMIN, Result, cell, load};
use crate::hub::Hub;
use crate::seed;

const GATE: &str = "scale-edge";
const RECEIVERS: usize = 10;
/// Bound on one edge reaching every receiver (the target is 1 s).
const BOUND: Duration = Duration::from_secs(60);

/// A message a receiver got: (receiver, event type, clusters it names, when).
type Got = (usize, String, usize, Instant);

async fn receiver(i: usize, tx: mpsc::UnboundedSender<Got>) -> Result<String> {
    let app = Router::new().route(
        "/hook",
        post(move |body: Bytes| {
            let tx = tx.clone();
            async move {
                let at = Instant::now();
                let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let kind = v["type"].as_str().unwrap_or_default().to_string();
                let clusters = v["data"]["clusters"].as_array().map_or(0, Vec::len);
                let _ = tx.send((i, kind, clusters, at));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hook", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    Ok(url)
}

/// Waits until every receiver in `want` got a `kind` message; the time from `t0` to the
/// last, and how many clusters the scoped and unscoped messages named.
async fn until_all(
    rx: &mut mpsc::UnboundedReceiver<Got>,
    kind: &str,
    want: &[usize],
    t0: Instant,
) -> Result<(Duration, Vec<usize>)> {
    let mut seen = vec![None; RECEIVERS];
    let deadline = tokio::time::Instant::now() + BOUND;
    while want.iter().any(|&i| seen[i].is_none()) {
        let (i, k, n, at) = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .map_err(|_| format!("no {kind} at every receiver within {BOUND:?}"))?
            .ok_or("receivers stopped")?;
        if k == kind && seen[i].is_none() {
            seen[i] = Some((at, n));
        }
    }
    let last = want
        .iter()
        .filter_map(|&i| seen[i].map(|(at, _)| at))
        .max()
        .ok_or("no receiver")?;
    let named = seen.iter().map(|s| s.map_or(0, |(_, n)| n)).collect();
    Ok((last.duration_since(t0), named))
}

/// The id of a created override (a number or a string).
fn override_id(o: &Value) -> Result<String> {
    match &o["id"] {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        other => Err(format!("override without id: {other}").into()),
    }
}

pub async fn run(bin: &Path, clusters: usize, rounds: usize) -> Result<()> {
    let hub = Hub::start(bin).await?;
    hub.post(
        "/api/v1/gates",
        json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": GATE},
            "spec": {"clusters": {"selector": {}}, "targets": {"kinds": ["Kustomization"]},
                     "default": "closed", "timeZone": "UTC", "windows": []}
        }),
    )
    .await?;
    let pool = hub.pool().await?;
    seed::clusters(&pool, 0, clusters, 100, 0, GATE).await?;
    pool.close().await;
    let (tx, mut rx) = mpsc::unbounded_channel();
    for i in 0..RECEIVERS {
        let url = receiver(i, tx.clone()).await?;
        let clusters = if i < RECEIVERS / 2 {
            json!({"selector": {"matchLabels": {"team": format!("t{i:03}")}}})
        } else {
            Value::Null
        };
        hub.post(
            "/api/v1/webhooks",
            json!({"name": format!("r{i}"), "url": url, "events": ["gate.opened", "gate.closed"],
                   "clusters": clusters}),
        )
        .await?;
    }
    let all: Vec<usize> = (0..RECEIVERS).collect();
    let one = seed::name(RECEIVERS / 2 * 100 + 7); // outside every selector
    let unscoped: Vec<usize> = (RECEIVERS / 2..RECEIVERS).collect();
    let hub = Arc::new(hub);
    let (mut fleet, mut single, mut writes) = (Vec::new(), Vec::new(), Vec::new());
    let mut named = Vec::new();
    for round in 0..=rounds {
        // The edge on every cluster.
        let t0 = Instant::now();
        let o = hub
            .post(
                &format!("/api/v1/gates/{GATE}/open"),
                json!({"for": "1h", "reason": format!("scale round {round}")}),
            )
            .await?;
        let wrote = t0.elapsed();
        let (took, n) = until_all(&mut rx, "gate.opened", &all, t0).await?;
        let id = override_id(&o)?;
        hub.call(
            ADMIN,
            Method::DELETE,
            &format!("/api/v1/overrides/{id}"),
            None,
        )
        .await?;
        until_all(&mut rx, "gate.closed", &all, Instant::now()).await?;
        // The edge on one cluster of the fleet.
        let t0 = Instant::now();
        let o = hub
            .post(
                &format!("/api/v1/gates/{GATE}/open"),
                json!({"for": "1h", "reason": format!("scale round {round}, one cluster"),
                       "clusters": {"names": [one]}}),
            )
            .await?;
        let (took_one, _) = until_all(&mut rx, "gate.opened", &unscoped, t0).await?;
        let id = override_id(&o)?;
        hub.call(
            ADMIN,
            Method::DELETE,
            &format!("/api/v1/overrides/{id}"),
            None,
        )
        .await?;
        until_all(&mut rx, "gate.closed", &unscoped, Instant::now()).await?;
        if round > 0 {
            fleet.push(took);
            writes.push(wrote);
            single.push(took_one);
            named = n;
        }
    }
    println!(
        "webhooks ({rounds} rounds; load average {}): an edge on {clusters} clusters to {RECEIVERS} \
         receivers ({} with a cluster selector), REST call to the last message: {}",
        load(),
        RECEIVERS / 2,
        cell(&fleet)
    );
    println!(
        "  of which the REST call (the override's write, answered): {}",
        cell(&writes)
    );
    println!(
        "  clusters named per message: selector-scoped {:?}, unscoped {:?}",
        &named[..RECEIVERS / 2],
        &named[RECEIVERS / 2..]
    );
    println!(
        "  an edge on 1 cluster of the {clusters} to the {} receivers it concerns: {}",
        RECEIVERS / 2,
        cell(&single)
    );
    Ok(())
}
