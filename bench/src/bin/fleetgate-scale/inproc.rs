//! The fleet reads timed inside this process through the hub's service layer (this
//! build's) on the bench's database: where a request's time goes — the fleet read
//! (SQL, restricted to the reader), then evaluation and projection — without HTTP or gRPC.

use std::time::{Duration, Instant};

use fleetgate_hub::Service;
use fleetgate_hub::ServiceDefaults as _;
use fleetgate_hub::service::fleet::Scope;
use fleetgate_hub::service::fleet::grid::grid;
use fleetgate_hub::service::fleet::grid_page::{FleetPageQuery, grid_page, page};
use fleetgate_hub::{Actor, Role};

use crate::common::{Result, cell, column, rounds, timed};

/// One reader's phases.
#[derive(Default)]
pub struct Phases {
    /// `read_fleet_as`: the fleet inputs the reader sees.
    read: Vec<Duration>,
    /// `fleet_summary` (what gRPC `GetFleetStatus` and `GET /api/v1/status` answer).
    summary: Vec<Duration>,
    /// `grid_page` of the read, 100 rows: briefs of every cluster, the page's rows built.
    page: Vec<Duration>,
    /// The grid of every cluster of the read, then its first page (the fleet page before).
    whole: Vec<Duration>,
    /// `fleet_view` as the replica's live feed reads it (every cluster, every gate on
    /// each): what an open dashboard or `WatchFleet` costs the hub per poll.
    view: Vec<Duration>,
}

/// `n` rounds (after one unmeasured) as the holder of `token`; both pages are made
/// from one read, and must be equal.
pub async fn measure(pool: &sqlx::PgPool, token: &str, n: usize) -> Result<Phases> {
    let service = Service::new(pool.clone());
    let actor = service.authenticate_api(token).await?;
    let q = FleetPageQuery {
        limit: Some(100),
        ..FleetPageQuery::default()
    };
    // The live feed's reader.
    let feed = Actor::new("fleet-feed", Role::Viewer);
    let samples = rounds(n, |_| {
        let (service, actor, q, feed) = (&service, &actor, &q, &feed);
        async move {
            let (inputs, read) =
                timed(async { Ok(service.read_fleet_as(actor, Scope::Fleet).await?) }).await?;
            let (_, summary) = timed(async { Ok(service.fleet_summary(actor).await?) }).await?;
            let t = Instant::now();
            let fast = grid_page(&inputs, q)?;
            let paged = t.elapsed();
            let t = Instant::now();
            let slow = page(grid(&inputs)?, q)?;
            let whole = t.elapsed();
            if serde_json::to_value(&fast)? != serde_json::to_value(&slow)? {
                return Err("the fleet page from briefs differs from the whole grid's page".into());
            }
            let (_, view) = timed(async { Ok(service.fleet_view(feed).await?) }).await?;
            Ok([read, summary, paged, whole, view])
        }
    })
    .await?;
    Ok(Phases {
        read: column(&samples, 0),
        summary: column(&samples, 1),
        page: column(&samples, 2),
        whole: column(&samples, 3),
        view: column(&samples, 4),
    })
}

/// Prints `p` under `label`.
pub fn print(label: &str, p: &Phases) {
    println!("  in process, {label}:");
    println!("    fleet read (SQL, restricted):        {}", cell(&p.read));
    println!(
        "    fleet summary (read + evaluate):     {}",
        cell(&p.summary)
    );
    println!("    fleet page, rows of the page built:  {}", cell(&p.page));
    println!(
        "    whole grid, then its page (before):  {}",
        cell(&p.whole)
    );
    println!("    live feed's fleet view (unscoped):   {}", cell(&p.view));
}

/// With `FLEETGATE_SCALE_EXPLAIN` set: PostgreSQL's plan of the scoped reader's cluster
/// read (the store's query for a `matchLabels` scope) as a prepared statement after its
/// sixth execution, when PostgreSQL may switch to a generic plan.
pub async fn explain(pool: &sqlx::PgPool, team: &str) -> Result<()> {
    if std::env::var_os("FLEETGATE_SCALE_EXPLAIN").is_none() {
        return Ok(());
    }
    let mut conn = pool.acquire().await?;
    sqlx::raw_sql(
        "prepare scoped_read(jsonb) as select c.name, c.labels, k.connected, l.heartbeat_at \
         from clusters c cross join fleet_revision f \
         left join cluster_connections k on k.cluster = c.name \
         left join replica_leases l on l.replica = k.connected_replica \
         where (true and c.labels @> $1::jsonb) order by c.name",
    )
    .execute(&mut *conn)
    .await?;
    let labels = serde_json::json!({ "team": team }).to_string();
    let mut plan = Vec::new();
    for _ in 0..7 {
        plan = sqlx::query_scalar::<_, String>(sqlx::AssertSqlSafe(format!(
            "explain (analyze, costs off) execute scoped_read('{labels}')"
        )))
        .fetch_all(&mut *conn)
        .await?;
    }
    println!("  plan of the scoped cluster read (team {team}):");
    for line in plan {
        println!("    {line}");
    }
    Ok(())
}
