//! The measured fleets, written straight into the hub's database in one statement each
//! (registering 10,000 clusters through the API would measure registration, not the read):
//! clusters labelled by team, with what their spokes reported.

use serde_json::json;

use crate::common::Result;

/// Clusters `from..to` named `s-00042`, labelled `team: t000` (teams of `team` clusters),
/// `env` and `region`, each with `objects` reported Flux objects under `gate` (one in
/// ten held).
pub async fn clusters(
    pool: &sqlx::PgPool,
    from: usize,
    to: usize,
    team: usize,
    objects: usize,
    gate: &str,
) -> Result<()> {
    let names: Vec<String> = (from..to).map(name).collect();
    let labels: Vec<serde_json::Value> = (from..to)
        .map(|i| {
            let region = ["eu", "us", "ap"][i % 3];
            json!({
                "team": format!("t{:03}", i / team),
                "env": if i % 3 == 0 { "prod" } else { "dev" },
                "region": region,
            })
        })
        .collect();
    sqlx::query(
        "with c as (insert into clusters (name, labels, token_hash, created_at) \
           select n, l, sha256(convert_to('scale-' || n, 'UTF8')), now() \
           from unnest($1::text[], $2::jsonb[]) as u(n, l) returning name) \
         insert into cluster_connections (cluster) select name from c",
    )
    .bind(&names)
    .bind(&labels)
    .execute(pool)
    .await?;
    sqlx::query(
        "insert into object_status (cluster, kind, namespace, name, gates, held, reported_at) \
         select c, 'Kustomization', 'apps', 'app-' || k, array[$3], k % 10 = 0, now() \
         from unnest($1::text[]) as c, generate_series(0, $2 - 1) as k",
    )
    .bind(&names)
    .bind(i32::try_from(objects)?)
    .bind(gate)
    .execute(pool)
    .await?;
    // `vacuum` as autovacuum would soon after: one statement just put every new cluster's
    // labels into the GIN index's pending list (migration 0064's index is `fastupdate`),
    // which every `labels @> …` search reads whole until a vacuum merges it; PostgreSQL
    // then scans all of `clusters` instead (2.3 ms against 0.07 ms at 10,000 clusters).
    // `FLEETGATE_SCALE_NO_VACUUM` set: `analyze` only, as before (the pending list kept).
    let sql = if std::env::var_os("FLEETGATE_SCALE_NO_VACUUM").is_some() {
        "analyze"
    } else {
        "vacuum analyze"
    };
    sqlx::query(sql).execute(pool).await?;
    Ok(())
}

/// The name of cluster `i`.
pub fn name(i: usize) -> String {
    format!("s-{i:05}")
}
