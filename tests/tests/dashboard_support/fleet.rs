//! A realistic fleet for the dashboard benchmark and the docs/dashboard.md screenshot:
//! clusters labelled by env/region/tier and up to ten gates with windows in
//! several time zones, all created through the REST API.

use futures::StreamExt as _;
use serde_json::{Value, json};

use super::Hub;

const ENVS: [&str; 10] = [
    "prod", "prod", "prod", "prod", "prod", "staging", "staging", "staging", "dev", "dev",
];
const REGIONS: [&str; 3] = ["eu", "us", "ap"];
const TIERS: [&str; 4] = ["web", "payments", "data", "platform"];

/// Name and labels of cluster `i`.
pub fn cluster(i: usize) -> (String, Value) {
    let env = ENVS[i % ENVS.len()];
    let region = REGIONS[(i / 2) % REGIONS.len()];
    let tier = TIERS[(i / 3) % TIERS.len()];
    (
        format!("{env}-{region}-{i:03}"),
        json!({"env": env, "region": region, "tier": tier}),
    )
}

fn gate(
    name: &str,
    description: &str,
    scope: Value,
    default: &str,
    tz: &str,
    windows: Value,
) -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": name},
        "spec": {
            "description": description, "clusters": scope,
            "targets": {"kinds": ["Kustomization", "HelmRelease"]},
            "default": default, "timeZone": tz, "windows": windows,
        }
    })
}

fn labels(k: &str, v: &str) -> Value {
    json!({"selector": {"matchLabels": {k: v}}})
}

/// The first `n` (≤ 10) gates.
pub fn gates(n: usize) -> Vec<Value> {
    let all = vec![
        gate(
            "business-hours",
            "Production changes only Mon 08:00 – Thu 17:00.",
            labels("env", "prod"),
            "closed",
            "Europe/Berlin",
            json!([{"name": "mon-to-thu", "kind": "allow", "schedule": "0 8 * * MON", "duration": "81h"}]),
        ),
        gate(
            "no-deploy-friday",
            "Nothing rolls out from Friday 00:00 until Monday 00:00.",
            json!({"selector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "staging"]}]}}),
            "open",
            "Europe/Berlin",
            json!([{"name": "weekend", "kind": "deny", "schedule": "0 0 * * FRI", "duration": "72h"}]),
        ),
        gate(
            "sre-approval",
            "EU production changes only while an SRE has opened the gate.",
            json!({"selector": {"matchLabels": {"env": "prod", "region": "eu"}}}),
            "closed",
            "Europe/Berlin",
            json!([]),
        ),
        gate(
            "holiday-freeze",
            "Year-end change freeze.",
            json!({"selector": {}}),
            "open",
            "Europe/Berlin",
            json!([{"name": "xmas-2026", "kind": "deny", "start": "2026-12-20T00:00:00", "end": "2027-01-04T00:00:00"}]),
        ),
        gate(
            "staging-nightly",
            "Staging rolls out nightly.",
            labels("env", "staging"),
            "closed",
            "America/New_York",
            json!([{"name": "nightly", "kind": "allow", "schedule": "0 22 * * *", "duration": "6h"}]),
        ),
        gate(
            "ap-maintenance",
            "APAC maintenance windows.",
            labels("region", "ap"),
            "closed",
            "Asia/Tokyo",
            json!([{"name": "tue-thu-night", "kind": "allow", "schedule": "0 2 * * TUE,THU", "duration": "4h"}]),
        ),
        gate(
            "payments-approval",
            "Payments clusters change only with approval.",
            labels("tier", "payments"),
            "closed",
            "UTC",
            json!([]),
        ),
        gate(
            "us-change-window",
            "US business-day afternoons.",
            labels("region", "us"),
            "closed",
            "America/Chicago",
            json!([{"name": "weekday-afternoon", "kind": "allow", "schedule": "0 14 * * MON-FRI", "duration": "3h"}]),
        ),
        gate(
            "data-freeze",
            "Data platform freeze during quarter close.",
            labels("tier", "data"),
            "open",
            "UTC",
            json!([{"name": "quarter-close", "kind": "deny", "start": "2026-12-28T00:00:00", "end": "2027-01-02T00:00:00"}]),
        ),
        gate(
            "dev-open",
            "Development clusters are always open.",
            labels("env", "dev"),
            "open",
            "UTC",
            json!([]),
        ),
    ];
    all.into_iter().take(n).collect()
}

/// Registers `clusters` clusters and `gates` gates; returns (name, spoke
/// token) per cluster.
pub async fn seed(hub: &Hub, clusters: usize, gate_count: usize) -> Vec<(String, String)> {
    for g in gates(gate_count) {
        hub.gate(g).await;
    }
    futures::stream::iter(0..clusters)
        .map(|i| async move {
            let (name, labels) = cluster(i);
            let token = hub.cluster(&name, labels).await;
            (name, token)
        })
        .buffered(8)
        .collect()
        .await
}

/// Registers `clusters` clusters (as [`cluster`] names and labels them) in bulk, straight
/// into the hub's database in one statement (registering 10,000 through REST would take
/// minutes on a shared machine), and `gates` gates through REST. The spokes' tokens are
/// unknown (a hash of nothing anyone holds): for views only.
#[allow(dead_code)]
pub async fn seed_bulk(hub: &Hub, clusters: usize, gate_count: usize) {
    for g in gates(gate_count) {
        hub.gate(g).await;
    }
    let (names, labels): (Vec<String>, Vec<Value>) = (0..clusters).map(cluster).unzip();
    let pool = sqlx::PgPool::connect(&hub.db.url).await.expect("database");
    sqlx::query(
        "with c as (insert into clusters (name, labels, token_hash, created_at) \
           select n, l, sha256(convert_to('bulk-' || n, 'UTF8')), now() \
           from unnest($1::text[], $2::jsonb[]) as u(n, l) returning name) \
         insert into cluster_connections (cluster) select name from c",
    )
    .bind(&names)
    .bind(&labels)
    .execute(&pool)
    .await
    .expect("bulk clusters");
    pool.close().await;
}
