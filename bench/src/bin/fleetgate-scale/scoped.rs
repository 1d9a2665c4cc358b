//! A scoped reader's fleet status costs its share of the fleet: one team's 100 clusters in
//! a fleet of 100, then the same team in a fleet of 10,000, through every read surface
//! (REST fleet status, the dashboard's first page, gRPC `GetFleetStatus`), in one run.

use std::path::Path;
use std::time::{Duration, Instant};

use fleetgate_proto::v1 as pb;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{ADMIN, Result, cell, column, load, rounds, stats, timed};
use crate::hub::Hub;
use crate::seed;

/// The gate every cluster's objects report under.
const GATE: &str = "scale-all";

fn gate(name: &str, clusters: Value, default: &str, windows: Value) -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": name},
        "spec": {
            "clusters": clusters,
            "targets": {"kinds": ["Kustomization", "HelmRelease"]},
            "default": default, "timeZone": "Europe/Berlin", "windows": windows,
        }
    })
}

/// One surface's timings per reader.
struct Surfaces {
    rest: Vec<Duration>,
    /// REST `GET /api/v1/status`: the summary gRPC `GetFleetStatus` answers with.
    summary: Vec<Duration>,
    page: Vec<Duration>,
    grpc: Vec<Duration>,
}

async fn measure(hub: &Hub, token: &str, n: usize, expect: usize) -> Result<Surfaces> {
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", hub.grpc))?
            .connect()
            .await?;
    let admin = pb::admin_service_client::AdminServiceClient::new(channel);
    let bearer: tonic::metadata::MetadataValue<_> = format!("Bearer {token}").parse()?;
    let samples = rounds(n, |_| {
        let mut admin = admin.clone();
        let bearer = bearer.clone();
        async move {
            let (status, rest) =
                timed(hub.call(token, Method::GET, "/api/v1/status/clusters", None)).await?;
            let seen = status["clusters"].as_array().map_or(0, Vec::len);
            if seen != expect {
                return Err(format!("the reader saw {seen} clusters, not {expect}").into());
            }
            let (_, summary) = timed(hub.call(token, Method::GET, "/api/v1/status", None)).await?;
            let (_, page) = timed(hub.call(
                token,
                Method::GET,
                "/api/v1/dashboard/fleet?limit=100",
                None,
            ))
            .await?;
            let mut req = tonic::Request::new(pb::GetFleetStatusRequest {});
            req.metadata_mut().insert("authorization", bearer);
            let (_, grpc) = timed(async { Ok(admin.get_fleet_status(req).await?) }).await?;
            Ok([rest, summary, page, grpc])
        }
    })
    .await?;
    Ok(Surfaces {
        rest: column(&samples, 0),
        summary: column(&samples, 1),
        page: column(&samples, 2),
        grpc: column(&samples, 3),
    })
}

fn ratio(a: &[Duration], b: &[Duration]) -> f64 {
    stats(a).0 / stats(b).0
}

/// A hub's timings: the team and the admin in the small fleet, then in the large one.
struct Measured {
    small_team: Surfaces,
    small_admin: Surfaces,
    large_team: Surfaces,
    large_admin: Surfaces,
}

pub async fn run(
    bin: &Path,
    baseline: Option<&Path>,
    clusters: usize,
    team: usize,
    rounds: usize,
) -> Result<()> {
    let hub = Hub::start(bin).await?;
    hub.post(
        "/api/v1/gates",
        gate(GATE, json!({"selector": {}}), "open", json!([])),
    )
    .await?;
    hub.post(
        "/api/v1/gates",
        gate(
            "scale-prod",
            json!({"selector": {"matchLabels": {"env": "prod"}}}),
            "closed",
            json!([{"name": "weekdays", "kind": "allow", "schedule": "0 8 * * MON-THU", "duration": "9h"}]),
        ),
    )
    .await?;
    hub.post(
        "/api/v1/gates",
        gate(
            "scale-eu",
            json!({"selector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}}),
            "open",
            json!([{"name": "friday", "kind": "deny", "schedule": "0 0 * * FRI", "duration": "72h"}]),
        ),
    )
    .await?;
    let pool = hub.pool().await?;
    seed::clusters(&pool, 0, team, team, 5, GATE).await?;
    let created = hub
        .post(
            "/api/v1/tokens",
            json!({"name": "team-t000", "role": "viewer",
                   "scope": {"clusters": {"selector": {"matchLabels": {"team": "t000"}}}}}),
        )
        .await?;
    let token = created["secret"]
        .as_str()
        .ok_or("no token secret")?
        .to_string();

    let base = match baseline {
        Some(b) => Some(hub.beside(b).await?),
        None => None,
    };
    let mut hubs = vec![&hub];
    hubs.extend(base.as_ref());
    let mut small = Vec::new();
    for h in &hubs {
        small.push((
            measure(h, &token, rounds, team).await?,
            measure(h, ADMIN, rounds, team).await?,
        ));
    }
    let inproc_small = crate::inproc::measure(&pool, &token, rounds).await?;
    let load_small = load();
    let t = Instant::now();
    seed::clusters(&pool, team, clusters, team, 5, GATE).await?;
    println!(
        "scoped reads: seeded {} more clusters ({} objects each) in {:.1} s",
        clusters - team,
        5,
        t.elapsed().as_secs_f64()
    );
    let mut measured = Vec::new();
    for (h, (small_team, small_admin)) in hubs.iter().zip(small) {
        measured.push(Measured {
            small_team,
            small_admin,
            large_team: measure(h, &token, rounds, team).await?,
            large_admin: measure(h, ADMIN, rounds.min(5), clusters).await?,
        });
    }
    let inproc_large = crate::inproc::measure(&pool, &token, rounds).await?;
    crate::inproc::explain(&pool, "t000").await?;
    let load_large = load();
    pool.close().await;

    println!("scoped reads ({rounds} rounds each; load average {load_small} / {load_large}):");
    for (m, build) in measured.iter().zip(["this build", "baseline"]) {
        if hubs.len() > 1 {
            println!(" {build}:");
        }
        print(m, clusters, team);
    }
    crate::inproc::print(&format!("team of {team}, fleet of {team}"), &inproc_small);
    crate::inproc::print(
        &format!("team of {team}, fleet of {clusters}"),
        &inproc_large,
    );
    Ok(())
}

fn print(m: &Measured, clusters: usize, team: usize) {
    let Measured {
        small_team,
        small_admin,
        large_team,
        large_admin,
    } = m;
    for (what, s, t, a, w) in [
        (
            "REST GET /api/v1/status/clusters",
            &small_team.rest,
            &large_team.rest,
            &small_admin.rest,
            &large_admin.rest,
        ),
        (
            "REST GET /api/v1/status (the summary GetFleetStatus answers)",
            &small_team.summary,
            &large_team.summary,
            &small_admin.summary,
            &large_admin.summary,
        ),
        (
            "REST GET /api/v1/dashboard/fleet?limit=100",
            &small_team.page,
            &large_team.page,
            &small_admin.page,
            &large_admin.page,
        ),
        (
            "gRPC GetFleetStatus",
            &small_team.grpc,
            &large_team.grpc,
            &small_admin.grpc,
            &large_admin.grpc,
        ),
    ] {
        println!("  {what}");
        println!("    team of {team}, fleet of {team}:     {}", cell(s));
        println!("    admin, fleet of {team}:              {}", cell(a));
        println!("    team of {team}, fleet of {clusters}:   {}", cell(t));
        println!("    admin, fleet of {clusters}:          {}", cell(w));
        println!(
            "    ratio team@{clusters} / fleet of {team} (admin): {:.2}x; / team@{team}: {:.2}x; \
             whole fleet / team@{clusters}: {:.1}x",
            ratio(t, a),
            ratio(t, s),
            ratio(w, t)
        );
    }
}
