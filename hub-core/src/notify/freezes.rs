//! The `gate.opened`/`gate.closed` a fleet freeze's start or end causes at
//! once, enqueued in the freeze write's own transaction (as override writes
//! do) under the key the scheduler uses for that instant: a scan that ran at
//! the very instant of the write, before it committed, misses nothing, and a
//! scan that sees the change too adds nothing. A freeze made inside a cluster
//! and reported late by its spoke is announced the same way as an in-cluster
//! request (cause `inClusterRequest`, at the freeze's own instant), so a scan
//! that already passed that instant misses nothing either.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::Cause;
use crate::Result;
use crate::db::clusters::Scoped;
use crate::db::freezes::FreezeRecord;
use crate::service::fleet::applying::{reaches, stored_gate};

/// Who made a freeze write's edges, why, and at which instant they happened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct By<'a> {
    pub actor: &'a str,
    pub cause: Cause,
    /// The edges' instant (and dedup key): the write's `now` for a hub
    /// freeze, the freeze's start for one made in a cluster.
    pub at: DateTime<Utc>,
}

impl<'a> By<'a> {
    /// A freeze written at the hub: cause `override`, at `now`.
    pub(crate) fn hub(actor: &'a str, now: DateTime<Utc>) -> Self {
        Self {
            actor,
            cause: Cause::Override,
            at: now,
        }
    }

    /// A freeze made inside a cluster, started or ended at `at`: the cause
    /// and instant an in-cluster request's edges have.
    pub(crate) fn in_cluster(actor: &'a str, at: DateTime<Utc>) -> Self {
        Self {
            actor,
            cause: Cause::InClusterRequest,
            at,
        }
    }
}

/// Enqueues the state changes of every gate on the clusters of `all` whose
/// freezes differ between `before` and `after` (the live freezes around the
/// write), evaluated at `now`, as `by` says. Returns how many events were inserted.
pub(crate) async fn enqueue_edges(
    conn: &mut PgConnection,
    all: &[Scoped],
    before: &[FreezeRecord],
    after: &[FreezeRecord],
    now: DateTime<Utc>,
    by: By<'_>,
) -> Result<usize> {
    let ids = |fs: &[FreezeRecord], c: &Scoped| -> Vec<uuid::Uuid> {
        fs.iter()
            .filter(|f| crate::service::freezes::scope::covers(f, c))
            .map(|f| f.id)
            .collect()
    };
    let touched: Vec<&Scoped> = all
        .iter()
        .filter(|c| ids(before, c) != ids(after, c))
        .collect();
    if touched.is_empty() {
        return Ok(0);
    }
    let rows = crate::db::gates::all(conn).await?;
    let names: Vec<String> = rows.iter().map(|r| r.name.clone()).collect();
    let overrides = crate::db::overrides::live_for_gates(conn, &names, now).await?;
    let feeds = crate::db::calendar_feeds::for_gates(conn, None).await?;
    let mut inserted = 0;
    for r in &rows {
        let gate = stored_gate(&r.manifest)?;
        let within = r.writer_scope.as_ref().map(|w| w.0.as_slice());
        let on: Vec<&Scoped> = touched
            .iter()
            .copied()
            .filter(|c| reaches(&gate, within, *c))
            .collect();
        if on.is_empty() {
            continue;
        }
        let mine: Vec<_> = feeds.iter().filter(|f| f.gate == r.name).cloned().collect();
        let occurrences = crate::service::calendars::feeds::feed_occurrences(&mine);
        let Ok(compiled) = crate::service::calendars::feeds::compile_at(&gate, &occurrences, now)
        else {
            continue;
        };
        // Only this gate's overrides: each cluster looks through them twice.
        let own: Vec<_> = overrides
            .iter()
            .filter(|o| o.gate == r.name)
            .cloned()
            .collect();
        let mut changes = super::overrides::freeze_changes(
            &gate, &compiled, &on, &own, before, after, now, by.cause, by.actor,
        );
        for t in &mut changes {
            t.at = by.at;
        }
        inserted += super::enqueue_transitions(conn, Some(&gate), changes, None).await?;
    }
    Ok(inserted)
}
