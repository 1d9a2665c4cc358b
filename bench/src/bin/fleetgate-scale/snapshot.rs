//! The largest snapshot the budgets allow (`fleetgate_policy::budgets`), built by the hub
//! from its database and sent to a spoke over gRPC: gates whose manifests are at
//! `GATE_MANIFEST_MAX_BYTES` with selectors at their term and value budgets, each with its
//! feed windows' `GATE_MAX_OCCURRENCES` occurrences and the longest summaries, as many such
//! gates on one cluster as `SNAPSHOT_MAX_BYTES` holds.

use std::path::Path;
use std::time::{Duration, Instant};

use chrono::Utc;
use fleetgate_hub::Service;
use fleetgate_hub::ServiceDefaults as _;
use fleetgate_policy::budgets::{
    CALENDAR_MAX_OCCURRENCES, GATE_MANIFEST_MAX_BYTES, GATE_MAX_OCCURRENCES,
    GRPC_MAX_MESSAGE_BYTES, SNAPSHOT_MAX_BYTES,
};
use fleetgate_proto::v1 as pb;
use fleetgate_proto::v1::hub_message;
use fleetgate_tests::largest::{
    FEED_WINDOWS, Text, first_occurrence, largest_manifest, longest_summary,
};
use prost::Message as _;
use reqwest::Method;
use serde_json::{Value, json};

use crate::common::{ADMIN, Result, cell, load};
use crate::hub::Hub;

const CLUSTER: &str = "largest";

/// The manifest of a gate at every budget: a little under its budget, since the hub counts
/// the manifest as it stores it.
const MANIFEST_BYTES: usize = GATE_MANIFEST_MAX_BYTES - 1024;

/// A feed window's occurrences at their budget, as the hub stores a fetched feed's.
fn occurrences(window: usize) -> Value {
    let summary = longest_summary(&mut Text::Repeated('s'));
    let first = first_occurrence();
    let all: Vec<Value> = (0..CALENDAR_MAX_OCCURRENCES)
        .map(|n| {
            let start = first
                + chrono::Duration::hours(2 * i64::try_from(n).unwrap_or(0))
                + chrono::Duration::minutes(i64::try_from(window).unwrap_or(0));
            json!({"start": start, "end": start + chrono::Duration::minutes(59), "summary": summary})
        })
        .collect();
    Value::Array(all)
}

/// Connects as the cluster's spoke and waits for its first snapshot.
async fn first_snapshot(hub: &Hub, token: &str) -> Result<(pb::Snapshot, Duration)> {
    let channel =
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{}", hub.grpc))?
            .connect()
            .await?;
    let bearer: tonic::metadata::MetadataValue<_> = format!("Bearer {token}").parse()?;
    let mut client = pb::spoke_service_client::SpokeServiceClient::with_interceptor(
        channel,
        move |mut r: tonic::Request<()>| {
            r.metadata_mut().insert("authorization", bearer.clone());
            Ok(r)
        },
    )
    .max_decoding_message_size(GRPC_MAX_MESSAGE_BYTES);
    let hello = pb::SpokeMessage {
        msg: Some(pb::spoke_message::Msg::Hello(pb::Hello {
            cluster: CLUSTER.into(),
            spoke_version: "scale-bench".into(),
            ..Default::default()
        })),
    };
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(hello).await?;
    let t0 = Instant::now();
    let mut inbound = client
        .connect(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(120), inbound.message())
            .await
            .map_err(|_| "no snapshot within 120 s")??
            .ok_or("the hub ended the stream before a snapshot")?;
        if let Some(hub_message::Msg::Snapshot(s)) = msg.msg {
            let took = t0.elapsed();
            drop(tx);
            return Ok((s, took));
        }
    }
}

pub async fn run(bin: &Path, rounds: usize) -> Result<()> {
    let hub = Hub::start(bin).await?;
    let registered = hub
        .post(
            "/api/v1/clusters",
            json!({"name": CLUSTER, "labels": {"env": "prod"}}),
        )
        .await?;
    let token = registered["token"]
        .as_str()
        .ok_or("no spoke token")?
        .to_string();
    let pool = hub.pool().await?;
    let service = Service::new(pool.clone());
    // Gates at their budgets, as many as the snapshot budget holds.
    let mut gates = 0;
    let (mut size, mut snapshot_gates) = (0, 0);
    for i in 0..32 {
        let name = format!("big-{i}");
        let gate = largest_manifest(&name, CLUSTER, MANIFEST_BYTES, &mut Text::Repeated('v'));
        hub.post("/api/v1/gates", gate).await?;
        for w in 0..FEED_WINDOWS {
            sqlx::query(
                "update calendar_feeds set occurrences = $3, published_fetched_at = now(), \
                 fetched_at = now(), changed_at = now(), next_fetch_at = now() + interval '3650 days' \
                 where gate = $1 and window_name = $2",
            )
            .bind(&name)
            .bind(format!("feed-{w}"))
            .bind(occurrences(w))
            .execute(&pool)
            .await?;
        }
        let snap = service.cluster_snapshot(CLUSTER).await?;
        let encoded =
            fleetgate_hub::grpc::convert::snapshot_to_proto(&snap, Utc::now(), false).encoded_len();
        if encoded > SNAPSHOT_MAX_BYTES {
            hub.call(
                ADMIN,
                Method::DELETE,
                &format!("/api/v1/gates/{name}"),
                None,
            )
            .await?;
            break;
        }
        gates = i + 1;
        (size, snapshot_gates) = (encoded, snap.gates.len());
    }
    // Built by the hub's code from the database: read, compile, convert, encode.
    let mut build = Vec::new();
    for _ in 0..=rounds {
        let t = Instant::now();
        let snap = service.cluster_snapshot(CLUSTER).await?;
        let bytes = fleetgate_hub::grpc::convert::snapshot_to_proto(&snap, Utc::now(), false)
            .encode_to_vec();
        build.push(t.elapsed());
        std::hint::black_box(bytes);
    }
    let cold_build = build.remove(0);
    // Sent: a spoke's connection, from its hello to the decoded snapshot.
    let mut send = Vec::new();
    let mut received = (0, 0);
    for _ in 0..=rounds {
        let (s, took) = first_snapshot(&hub, &token).await?;
        received = (s.encoded_len(), s.gates.len());
        send.push(took);
    }
    let cold_send = send.remove(0);
    pool.close().await;
    println!(
        "largest snapshot (budget {SNAPSHOT_MAX_BYTES} bytes): {gates} gates of {} manifest bytes \
         and {GATE_MAX_OCCURRENCES} feed occurrences each = {size} bytes ({snapshot_gates} gates); \
         received by the spoke: {} bytes, {} gates",
        MANIFEST_BYTES, received.0, received.1
    );
    println!(
        "  built by the hub (read, compile, convert, encode; {rounds} rounds, load average {}): \
         first {:.0} ms, then {}",
        load(),
        cold_build.as_secs_f64() * 1000.0,
        cell(&build)
    );
    println!(
        "  sent to a spoke over gRPC (hello to decoded snapshot): first {:.0} ms, then {}",
        cold_send.as_secs_f64() * 1000.0,
        cell(&send)
    );
    Ok(())
}
