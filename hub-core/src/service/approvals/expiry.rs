//! Expiry of pending approval requests, driven by the hub's (injectable) clock: every
//! replica looks every few seconds; a request ends once (conditional update under the
//! row lock, `SKIP LOCKED` between replicas), with an audit entry and an
//! `approval.expired` event.

use super::requests::event;
use crate::Result;
use crate::db::approvals as db;
use crate::db::revision::Affected;
use crate::service::{Actor, Role, Service, Written, to_json};

/// How many due requests one expiry pass ends per transaction.
const EXPIRE_BATCH: i64 = 100;

impl Service {
    /// Ends every pending request whose time ran out by now (the hub's clock), each with
    /// an audit entry and an `approval.expired` event. Safe on every replica at once:
    /// a request is ended once (conditional update under the row lock). Returns how
    /// many this call ended.
    pub async fn expire_approval_requests(&self) -> Result<usize> {
        let now = self.now();
        if !db::any_due(&mut *self.conn().await?, now).await? {
            return Ok(0);
        }
        let system = &Actor::new("system", Role::Admin);
        let mut total = 0;
        loop {
            let (ended, _) = self
                .write(system, now, |tx| {
                    Box::pin(async move {
                        let due = db::due(tx, now, EXPIRE_BATCH).await?;
                        let mut ended = Vec::new();
                        for row in due {
                            if let Some(r) =
                                db::decide(tx, row.id, "expired", now, "system", None, None).await?
                            {
                                let rec = r.into_api(Vec::new());
                                crate::notify::enqueue(
                                    tx,
                                    &event("approval.expired", &rec, &[], now),
                                )
                                .await?;
                                crate::db::audit::insert(
                                    tx,
                                    &crate::db::audit::NewAudit {
                                        at: now,
                                        actor: "system",
                                        action: "approval.expire",
                                        target_kind: "gate",
                                        target_name: &rec.gate,
                                        before: None,
                                        after: to_json(&rec),
                                        reason: Some("no approval before it expired"),
                                        who: system.audit_who(),
                                    },
                                )
                                .await?;
                                ended.push(rec);
                            }
                        }
                        if ended.is_empty() {
                            return Ok(Written::unchanged(0));
                        }
                        let n = ended.len();
                        Ok(Written::republished(n, Affected::Clusters(Vec::new())))
                    })
                })
                .await?;
            total += ended;
            for _ in 0..ended {
                self.approval_metrics().decided("expired");
            }
            if ended < usize::try_from(EXPIRE_BATCH).unwrap_or(100) {
                return Ok(total);
            }
        }
    }
}

/// How often each replica looks for requests whose time ran out.
const EXPIRY_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Expires pending requests until `stop` (every replica runs it; each request ends once).
pub async fn run_expiry(service: Service, stop: tokio_util::sync::CancellationToken) {
    loop {
        if let Ok(n) = service.pending_approvals().await {
            service.approval_metrics().set_pending(n);
        }
        match service.expire_approval_requests().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(expired = n, "approval requests expired"),
            Err(e) => tracing::warn!(error = %e, "expiring approval requests failed"),
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(EXPIRY_EVERY) => {}
        }
    }
}
