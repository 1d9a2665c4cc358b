//! Benchmark (prints numbers, asserts nothing but the budgets): what persisting a large
//! snapshot costs a spoke, written to and read back from the simulated API server (which
//! refuses a ConfigMap over 1 MiB as kube-apiserver does). Two snapshots:
//! - a big real configuration: 300 gates with long selectors (8 terms of 32 values each, on
//!   clusters and on targets), four cron windows and a holiday feed each, plus 8 gates whose
//!   feeds are at the gate's occurrence budget (2 windows of 5,000) with realistic summaries;
//! - the largest snapshot the budgets allow with random text (gzip's worst case).
//!
//! For each: gates, encoded (protobuf) bytes, JSON bytes, stored (gzip) bytes, ConfigMaps, and
//! the time to persist (encode, gzip, write every ConfigMap) and to load (read, verify,
//! gunzip, parse), median of 3. The machine runs other builds: read the times as upper bounds.
//! Run: `cargo bench -p fleetgate-spoke --bench snapshot_persist --profile dev` (debug code: JSON
//! and gzip several times slower than a release build).

mod support;

#[path = "../tests/support/largest.rs"]
#[allow(dead_code)]
mod largest;

use std::{sync::Arc, time::Instant};

use chrono::{Duration, TimeZone, Utc};
use fleetgate_policy::budgets::SNAPSHOT_MAX_BYTES;
use fleetgate_proto::{time::to_timestamp, v1 as pb};
use fleetgate_spoke::hub::{
    snapshot::{CompiledSnapshot, Snapshot},
    snapshot_store::SnapshotStore,
};
use prost::Message;
use serde_json::json;
use support::{CLUSTER, bench_main, client_for};

/// A gate closing the Kustomizations named `names` (what `largest` appends).
fn gate_named(name: &str, mode: &str, names: &[&str], default: &str) -> pb::GateRule {
    let manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": name},
        "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"], "names": names}, "mode": mode, "default": default}
    });
    rule(name, manifest.to_string(), Vec::new())
}

fn snapshot(revision: u64, gates: Vec<pb::GateRule>, overrides: Vec<pb::Override>) -> pb::Snapshot {
    pb::Snapshot {
        revision,
        cluster: CLUSTER.into(),
        gates,
        overrides,
        hub_time: None,
        local_gates_enforced: false,
    }
}

fn rule(
    name: &str,
    manifest_json: String,
    calendars: Vec<pb::CalendarOccurrences>,
) -> pb::GateRule {
    pb::GateRule {
        name: name.into(),
        version: 1,
        manifest_json,
        release: None,
        waiting: None,
        opening_fence: None,
        calendars,
    }
}

const TEAMS: [&str; 8] = [
    "payments",
    "ledger",
    "checkout",
    "search",
    "identity",
    "notifications",
    "catalog",
    "billing",
];
const REGIONS: [&str; 8] = [
    "eu-west-1",
    "eu-central-1",
    "us-east-1",
    "us-west-2",
    "ap-south-1",
    "ap-northeast-1",
    "sa-east-1",
    "ca-central-1",
];

/// `n` occurrences a day apart from `first`, with realistic summaries.
fn feed(
    window: &str,
    n: usize,
    first: chrono::DateTime<Utc>,
    what: &str,
) -> pb::CalendarOccurrences {
    pb::CalendarOccurrences {
        window: window.into(),
        occurrences: (0..n)
            .map(|i| {
                let start = first + Duration::hours(2 * i64::try_from(i).unwrap());
                pb::CalendarOccurrence {
                    start: Some(to_timestamp(start)),
                    end: Some(to_timestamp(start + Duration::minutes(90))),
                    summary: format!(
                        "{what}: {} {} maintenance window #{i} (CHG-{:06})",
                        REGIONS[i % 8],
                        TEAMS[(i / 8) % 8],
                        i * 7919 % 1_000_000
                    ),
                }
            })
            .collect(),
        stale_at: Some(to_timestamp(first + Duration::days(30))),
    }
}

/// Gate `i` of the real configuration; `heavy`: its feeds at the gate's occurrence budget.
fn real_gate(i: usize, heavy: bool) -> pb::GateRule {
    let name = format!(
        "{}-{}-release-train-{i:03}",
        TEAMS[i % 8],
        REGIONS[(i / 8) % 8]
    );
    let values = |t: usize, what: &str| -> Vec<String> {
        (0..32)
            .map(|v| {
                format!(
                    "{what}-{}-{}-{t:02}-{v:02}",
                    TEAMS[(v + t) % 8],
                    REGIONS[v % 8]
                )
            })
            .collect()
    };
    let terms = |what: &str| -> Vec<serde_json::Value> {
        (0..8)
            .map(|t| json!({"key": format!("platform.example.com/{what}-{t}"), "operator": "In", "values": values(t, what)}))
            .collect()
    };
    let mut windows = vec![
        json!({"name": "weekday-mornings", "kind": "allow", "schedule": "0 8 * * 1-4", "duration": "4h", "timeZone": "Europe/Berlin"}),
        json!({"name": "weekday-afternoons", "kind": "allow", "schedule": "0 13 * * 1-4", "duration": "3h", "timeZone": "Europe/Berlin"}),
        json!({"name": "no-deploy-friday", "kind": "deny", "schedule": "0 0 * * 5", "duration": "72h", "timeZone": "Europe/Berlin"}),
        json!({"name": "month-end-close", "kind": "deny", "schedule": "0 0 28 * *", "duration": "96h", "timeZone": "UTC"}),
        json!({"name": "holidays", "kind": "deny", "calendar": {"url": format!("https://calendar.example.com/holidays/{}.ics", REGIONS[i % 8])}}),
    ];
    let first = Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap();
    let mut calendars = vec![feed("holidays", 40, first, "Public holiday")];
    if heavy {
        calendars.clear();
        windows.pop();
        for w in ["change-freeze", "on-call-handover"] {
            windows.push(json!({"name": w, "kind": "deny", "calendar": {"url": format!("https://change.example.com/{name}/{w}.ics")}}));
            calendars.push(feed(w, 5_000, first, "Change freeze"));
        }
    }
    let manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": name},
        "spec": {
            "description": format!("Release train of {} in {}: changes flow Mon-Thu office hours, never on holidays or during month-end close.", TEAMS[i % 8], REGIONS[(i / 8) % 8]),
            "clusters": {"selector": {"matchExpressions": terms("cluster")}},
            "targets": {"kinds": ["Kustomization", "HelmRelease"], "selector": {"matchExpressions": terms("app")}},
            "mode": "suspend", "default": "closed",
            "windows": windows,
        }
    });
    rule(&name, manifest.to_string(), calendars)
}

fn real_configuration() -> pb::Snapshot {
    let mut gates: Vec<_> = (0..300).map(|i| real_gate(i, false)).collect();
    gates.extend((300..308).map(|i| real_gate(i, true)));
    snapshot(41, gates, Vec::new())
}

async fn measure(store: &SnapshotStore, what: &str, msg: pb::Snapshot) -> anyhow::Result<()> {
    let encoded = msg.encoded_len();
    assert!(encoded <= SNAPSHOT_MAX_BYTES, "{what}: {encoded} bytes");
    let gates = msg.gates.len();
    let compiled = Arc::new(CompiledSnapshot::compile(Snapshot::from_proto(msg)?)?);
    let (mut saves, mut loads, mut last) = (Vec::new(), Vec::new(), None);
    for _ in 0..3 {
        let t = Instant::now();
        let p = store.save(compiled.clone()).await?;
        saves.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let (back, _) = store.load().await?.expect("persisted");
        loads.push(t.elapsed().as_secs_f64());
        assert!(back == compiled.snapshot, "{what}: read back differs");
        last = Some(p);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let p = last.expect("three runs");
    println!(
        "{what}: {gates} gates, {encoded} bytes encoded, {} bytes of JSON, {} bytes stored in {} ConfigMap(s); persist {:.2} s, load {:.2} s (median of 3)",
        p.json_bytes,
        p.stored_bytes,
        p.config_maps,
        median(saves),
        median(loads)
    );
    Ok(())
}

fn main() -> anyhow::Result<()> {
    bench_main("snapshot_persist", "FLEETGATE_BENCH_UNUSED", 0, |_| async {
        let sim = fleetgate_sim::Sim::start(fleetgate_sim::SimConfig {
            clusters: vec![CLUSTER.into()],
            ..fleetgate_sim::SimConfig::default()
        })
        .await?;
        let client = client_for(&sim).await?;
        // Present already when the simulator made it for its own objects.
        let _ = sim
            .create_object(
                CLUSTER,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleetgate-system"}}),
            )
            .await;
        let store = SnapshotStore::new(client, "fleetgate-system", "fleetgate-spoke-snapshot");
        measure(&store, "big real configuration", real_configuration()).await?;
        let worst = largest::largest_snapshot(42, &mut largest::Text::Random(1), &["apps"]);
        measure(&store, "largest snapshot, random text", worst).await?;
        let best = largest::largest_snapshot(43, &mut largest::Text::Repeated('v'), &["apps"]);
        measure(&store, "largest snapshot, repeated text", best).await?;
        sim.shutdown().await;
        Ok(())
    })
}
