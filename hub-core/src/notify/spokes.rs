//! `spoke.disconnected` once a spoke has been gone for the grace period,
//! and `spoke.connected` when it is back. A scan on every replica (one at a
//! time, under a transaction-level advisory lock) compares each cluster's
//! liveness with the outages already announced (`notify_spokes_down`); the
//! events' dedup keys name the outage, so none is sent twice.

use chrono::{DateTime, SecondsFormat, Utc};

use super::event::NewEvent;
use crate::Result;
use crate::db::outbox;
use crate::service::Service;

/// Default of `--notify-spoke-grace`.
pub const DEFAULT_GRACE: &str = "5m";

/// The advisory lock key of the scan ("fgspokes").
const LOCK: i64 = 0x6667_7370_6f6b_6573;

fn event(event_type: &str, cluster: &str, since: DateTime<Utc>, at: DateTime<Utc>) -> NewEvent {
    let key = since.to_rfc3339_opts(SecondsFormat::Micros, true);
    NewEvent {
        event_type: event_type.into(),
        subject: format!("cluster/{cluster}"),
        dedup_key: Some(format!("{event_type}/{cluster}/{key}")),
        occurred_at: at,
        gate: None,
        clusters: vec![cluster.to_string()],
        data: serde_json::json!({
            "cluster": cluster,
            // The outage: last seen before it.
            "lastSeenAt": since,
            "at": at,
        }),
    }
}

impl Service {
    /// Announces the spokes gone for `grace` (and observed gone that long by
    /// this hub: counted from no earlier than `watching_since`, so a hub
    /// starting after a long stop does not report every spoke before they
    /// reconnect) and those back from an announced outage. Events inserted.
    pub async fn notify_spokes(
        &self,
        grace: chrono::Duration,
        watching_since: DateTime<Utc>,
    ) -> Result<usize> {
        let now = self.now();
        let mut tx = self.begin().await?;
        if !crate::db::try_advisory_xact_lock(&mut tx, LOCK).await? {
            return Ok(0);
        }
        let rows = outbox::spoke_liveness(&mut tx, now - grace).await?;
        let mut inserted = 0;
        for r in rows {
            let connected = r.connected_at(now);
            match (r.down_since, r.last_seen_at) {
                (Some(since), _) if connected => {
                    let ev = event("spoke.connected", &r.cluster, since, now);
                    inserted += usize::from(outbox::enqueue(&mut tx, &ev).await?.is_some());
                    outbox::spoke_up(&mut tx, &r.cluster).await?;
                }
                (None, Some(seen)) if !connected && seen.max(watching_since) + grace <= now => {
                    let ev = event("spoke.disconnected", &r.cluster, seen, now);
                    inserted += usize::from(outbox::enqueue(&mut tx, &ev).await?.is_some());
                    outbox::spoke_down(&mut tx, &r.cluster, seen, now).await?;
                }
                _ => {}
            }
        }
        tx.commit().await?;
        Ok(inserted)
    }
}

/// Scans every few seconds (at most a quarter of `grace`) until `stop`.
pub async fn run(
    service: Service,
    grace: chrono::Duration,
    stop: tokio_util::sync::CancellationToken,
) {
    let watching_since = service.now();
    let every = (grace / 4).to_std().unwrap_or_default().clamp(
        std::time::Duration::from_millis(100),
        std::time::Duration::from_secs(5),
    );
    loop {
        if let Err(e) = service.notify_spokes(grace, watching_since).await {
            tracing::warn!(error = %e, "spoke notification scan failed");
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}
