//! Calendar feeds (`calendar.url` windows) in the service layer: feed rows kept in step with
//! gate writes, the feeds' occurrences every compile of a gate takes, their status for the
//! APIs, and recording a refresh. A change of a feed's content is a gate change: one write
//! with an audit entry by `calendar-sync`, a revision bump and the change notification, so
//! every replica and spoke gets the new occurrences. Guide: `docs/calendars.md`.

pub mod feeds;

use chrono::{DateTime, Duration, DurationRound, Utc};
use fleetgate_api_types::records::CalendarFeedStatus;
use fleetgate_policy::{
    EventMatch, Gate, HORIZON_AFTER, HORIZON_BEFORE, Occurrence, budgets::GATE_MAX_OCCURRENCES,
    read_calendar,
};
use sha2::{Digest, Sha256};

pub use feeds::feed_occurrences;
pub(crate) use feeds::{compile_at, status};

use crate::db::calendar_feeds::{self, FeedRow, NewCopy};
use crate::db::{gates, revision::Affected};
use crate::service::{Actor, Audit, Role, Service, Written};
use crate::{Error, Result};

/// The actor of feed refreshes in the audit log.
pub const SYNC_ACTOR: &str = "calendar-sync";

/// Re-expand (and re-send) a copy once its horizon reaches less than this far ahead.
const HORIZON_KEEP: Duration = Duration::days(365);

/// The horizon a copy is expanded over at `now`: whole UTC days.
fn horizon(now: DateTime<Utc>) -> (DateTime<Utc>, DateTime<Utc>) {
    let day = now.duration_trunc(Duration::days(1)).unwrap_or(now);
    (day - HORIZON_BEFORE, day + HORIZON_AFTER)
}

/// What fetching a feed brought.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// 304: the copy held is current.
    NotModified,
    /// 200 with the body and its validators.
    Body {
        text: String,
        etag: Option<String>,
        last_modified: Option<String>,
    },
}

/// What recording a fetch did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// The content changed: a gate change (audited, revision bumped).
    Changed,
    /// Same content, re-sent to spokes (horizon moved or the fetch time was re-published).
    Republished,
    /// Same content, nothing to send.
    Unchanged,
    /// The fetch failed; the last good copy stays.
    Failed,
    /// Another replica took the feed over (this one's lease ran out) or it is gone.
    Lost,
}

/// The window of `gate` named `window`, with its zone and match (`None` if it is not a feed
/// window any more).
fn window_of<'g>(
    gate: &'g Gate,
    window: &str,
) -> Option<(&'g fleetgate_policy::Window, chrono_tz::Tz)> {
    let w = gate.spec.windows.iter().find(|w| w.name == window)?;
    w.calendar.as_ref()?.url.as_ref()?;
    let zone = w
        .time_zone
        .as_deref()
        .or(gate.spec.time_zone.as_deref())
        .and_then(|z| z.parse().ok())
        .unwrap_or(chrono_tz::Tz::UTC);
    Some((w, zone))
}

/// Reads a feed's text over the horizon at `now`, fail closed ([`read_calendar`]): any problem
/// refuses the copy as a whole, and the last good copy stays in force.
fn expand(
    text: &str,
    zone: chrono_tz::Tz,
    matcher: Option<&EventMatch>,
    now: DateTime<Utc>,
) -> std::result::Result<(Vec<Occurrence>, fleetgate_policy::ExpandedCalendar), String> {
    let (from, to) = horizon(now);
    let expanded =
        read_calendar(text.as_bytes(), zone, matcher, from, to).map_err(|e| e.to_string())?;
    Ok((expanded.occurrences.clone(), expanded))
}

/// The occurrences `gate`'s other feeds hold (their published copies), which a new copy of
/// `window` adds to within [`GATE_MAX_OCCURRENCES`].
fn other_feeds_occurrences(rows: &[FeedRow], window: &str) -> usize {
    rows.iter()
        .filter(|r| r.window_name != window)
        .map(|r| r.occurrences.as_array().map_or(0, Vec::len))
        .sum()
}

/// In the transaction that recorded a fetch of `row`: `calendar.failing` or
/// `calendar.recovered` when the feed started or stopped failing, and a change notification so
/// watchers see the new state at once (nothing spokes see changed).
async fn announce(
    conn: &mut sqlx::PgConnection,
    row: &FeedRow,
    recorded: Option<&calendar_feeds::FetchRecorded>,
    error: Option<&str>,
    now: DateTime<Utc>,
) -> Result<()> {
    let feed = crate::notify::calendars::Feed {
        gate: &row.gate,
        window: &row.window_name,
        url: &row.url,
    };
    if crate::notify::calendars::fetch_recorded(conn, feed, recorded, error, now).await? {
        tracing::info!(gate = %row.gate, window = %row.window_name, error = ?error, "calendar feed state changed");
    }
    Ok(())
}

impl Service {
    /// Feeds due now, claimed for `owner` for `lease` (at most `limit`).
    pub async fn claim_due_feeds(
        &self,
        owner: &str,
        lease: Duration,
        limit: i64,
    ) -> Result<Vec<FeedRow>> {
        let mut conn = self.conn().await?;
        calendar_feeds::claim_due(&mut conn, owner, self.now(), lease, limit).await
    }

    /// Records the outcome of `owner`'s fetch of `row`: a new content is a gate change
    /// (audit `calendar.change` by `calendar-sync`); the same content only moves the fetch
    /// time (re-sent to spokes when the horizon or the published fetch time has to move); a
    /// failure keeps the last good copy and retries sooner than `refresh`.
    pub async fn record_feed_fetch(
        &self,
        owner: &str,
        row: &FeedRow,
        outcome: std::result::Result<Fetched, String>,
    ) -> Result<Recorded> {
        let actor = Actor::new(SYNC_ACTOR, Role::Admin);
        let now = self.now();
        // What changes nothing people or spokes see (a failure, the same content) is recorded
        // in a transaction of its own: a write without a change rolls back.
        {
            let mut tx = self.begin().await?;
            let Some(current) =
                calendar_feeds::get_leased(&mut tx, &row.gate, &row.window_name, owner).await?
            else {
                return Ok(Recorded::Lost);
            };
            let refresh = Duration::seconds(current.refresh_seconds);
            let quiet = match &outcome {
                Err(error) => {
                    // Back off 1m, 2m, 4m … up to the refresh interval.
                    let backoff = Duration::minutes(1 << current.failures.clamp(0, 10));
                    let recorded = calendar_feeds::record_failure(
                        &mut tx,
                        &row.gate,
                        &row.window_name,
                        now,
                        now + backoff.min(refresh),
                        error,
                    )
                    .await?;
                    announce(&mut tx, row, recorded.as_ref(), Some(error), now).await?;
                    Some(Recorded::Failed)
                }
                Ok(fetched) => {
                    let same = match fetched {
                        Fetched::NotModified => true,
                        Fetched::Body { text, .. } => {
                            current.body_sha256.as_deref() == Some(&Sha256::digest(text)[..])
                        }
                    };
                    let horizon_moved =
                        current.expanded_to.is_none_or(|to| to < now + HORIZON_KEEP);
                    let republish = current.published_fetched_at.is_none_or(|p| {
                        now - p >= Duration::seconds(current.max_stale_seconds / 2)
                    });
                    if same && !horizon_moved && !republish {
                        let hint = current.refresh_hint_seconds.map(Duration::seconds);
                        let next = now + hint.map_or(refresh, |h| refresh.max(h));
                        let recorded = calendar_feeds::record_success(
                            &mut tx,
                            &row.gate,
                            &row.window_name,
                            now,
                            next,
                            None,
                            false,
                        )
                        .await?;
                        announce(&mut tx, row, recorded.as_ref(), None, now).await?;
                        Some(Recorded::Unchanged)
                    } else {
                        None
                    }
                }
            };
            if let Some(quiet) = quiet {
                tx.commit().await?;
                return Ok(quiet);
            }
        }
        let outcome = &outcome;
        let (recorded, refused) = self
            .write(&actor, now, |tx| {
                Box::pin(async move {
                    let lost = || Ok(Written::unchanged((Recorded::Lost, None)));
                    let Some(current) =
                        calendar_feeds::get_leased(tx, &row.gate, &row.window_name, owner).await?
                    else {
                        return lost();
                    };
                    let Some(stored) = gates::get(tx, &row.gate).await? else {
                        return lost();
                    };
                    let gate = crate::service::fleet::stored_gate(&stored.manifest)?;
                    let Some((window, zone)) = window_of(&gate, &row.window_name) else {
                        return lost();
                    };
                    let refresh = Duration::seconds(current.refresh_seconds);
                    let hint = current.refresh_hint_seconds.map(Duration::seconds);
                    let next_ok = now + hint.map_or(refresh, |h| refresh.max(h));
                    let body = match outcome {
                        // Recorded before the write (a failure changes nothing spokes see).
                        Err(error) => {
                            return Ok(Written::unchanged((Recorded::Failed, Some(error.clone()))));
                        }
                        Ok(Fetched::NotModified) => None,
                        Ok(Fetched::Body {
                            text,
                            etag,
                            last_modified,
                        }) => Some((text.as_str(), etag.as_deref(), last_modified.as_deref())),
                    };
                    let sha: Option<Vec<u8>> = body.map(|(t, ..)| Sha256::digest(t).to_vec());
                    let changed = sha.is_some() && sha != current.body_sha256;
                    let horizon_moved = current
                        .expanded_to
                        .is_some_and(|to| to < now + HORIZON_KEEP);
                    let half_stale = Duration::seconds(current.max_stale_seconds / 2);
                    let republish = current
                        .published_fetched_at
                        .is_none_or(|p| now - p >= half_stale);
                    if !changed && !horizon_moved {
                        let recorded = calendar_feeds::record_success(
                            tx,
                            &row.gate,
                            &row.window_name,
                            now,
                            next_ok,
                            None,
                            republish,
                        )
                        .await?;
                        announce(tx, row, recorded.as_ref(), None, now).await?;
                        if !republish {
                            return Ok(Written::unchanged((Recorded::Unchanged, None)));
                        }
                        let all = tx.scoped_clusters().await?;
                        let names =
                            crate::service::gates::clusters_in(&all, &[&gate.spec.clusters]);
                        let affected = Affected::among(names, all.len());
                        return Ok(Written::republished((Recorded::Republished, None), affected));
                    }
                    // New content, or the same content expanded over a moved horizon.
                    let text = match body {
                        Some((t, ..)) => t.to_string(),
                        None => calendar_feeds::body(tx, &row.gate, &row.window_name)
                            .await?
                            .unwrap_or_default(),
                    };
                    let (etag, last_modified) = match body {
                        Some((_, e, l)) => (e, l),
                        None => (current.etag.as_deref(), current.last_modified.as_deref()),
                    };
                    // A copy that cannot be read is refused as a whole: the failure is
                    // recorded after this write (which changes nothing and rolls back).
                    let (occurrences, expanded) =
                        match expand(&text, zone, window.event_match.as_ref(), now) {
                            Ok(x) => x,
                            Err(why) => {
                                return Ok(Written::unchanged((Recorded::Failed, Some(why))));
                            }
                        };
                    let feeds = calendar_feeds::for_gates(tx, Some(std::slice::from_ref(&row.gate))).await?;
                    let others = other_feeds_occurrences(&feeds, &row.window_name);
                    if others + occurrences.len() > GATE_MAX_OCCURRENCES {
                        return Ok(Written::unchanged((
                            Recorded::Failed,
                            Some(format!(
                                "the gate's feeds together would expand to more than {GATE_MAX_OCCURRENCES} occurrences in the horizon ({} here, {others} in its other feeds)",
                                occurrences.len()
                            )),
                        )));
                    }
                    let (from, to) = horizon(now);
                    let sha =
                        sha.unwrap_or_else(|| current.body_sha256.clone().unwrap_or_default());
                    let copy = NewCopy {
                        body: &text,
                        sha256: &sha,
                        etag,
                        last_modified,
                        occurrences: serde_json::to_value(&occurrences)
                            .map_err(|e| Error::Internal(e.to_string()))?,
                        rejected: serde_json::to_value(&expanded.rejected)
                            .map_err(|e| Error::Internal(e.to_string()))?,
                        expanded_from: from,
                        expanded_to: to,
                        refresh_hint_seconds: expanded.refresh_hint_seconds,
                        changed,
                    };
                    let next = now + expanded.refresh_hint().map_or(refresh, |h| refresh.max(h));
                    let recorded = calendar_feeds::record_success(
                        tx,
                        &row.gate,
                        &row.window_name,
                        now,
                        next,
                        Some(&copy),
                        true,
                    )
                    .await?;
                    announce(tx, row, recorded.as_ref(), None, now).await?;
                    let all = tx.scoped_clusters().await?;
                    let names = crate::service::gates::clusters_in(&all, &[&gate.spec.clusters]);
                    let affected = Affected::among(names, all.len());
                    if !changed {
                        return Ok(Written::republished((Recorded::Republished, None), affected));
                    }
                    let audit = Audit {
                        action: "calendar.change",
                        target_kind: "gate",
                        target_name: row.gate.clone(),
                        before: Some(serde_json::json!({
                            "window": row.window_name,
                            "occurrences": current.occurrences.as_array().map_or(0, Vec::len),
                            "sha256": current.body_sha256.as_deref().map(hex::encode),
                        })),
                        after: Some(serde_json::json!({
                            "window": row.window_name,
                            "url": crate::notify::calendars::display_url(&row.url),
                            "occurrences": occurrences.len(),
                            "rejected": expanded.rejected.len(),
                            "sha256": hex::encode(&sha),
                        })),
                        reason: Some(format!(
                            "calendar feed {} changed",
                            crate::notify::calendars::display_url(&row.url)
                        )),
                    };
                    Ok(Written::changed((Recorded::Changed, None), audit, affected))
                })
            })
            .await?
            .0;
        if let Some(error) = refused {
            // Visible even though nothing else changed: state failing, the error, one more
            // failure, the attempt's time; the last good copy stays in force.
            let mut tx = self.begin().await?;
            let Some(current) =
                calendar_feeds::get_leased(&mut tx, &row.gate, &row.window_name, owner).await?
            else {
                return Ok(Recorded::Lost);
            };
            let backoff = Duration::minutes(1 << current.failures.clamp(0, 10));
            let refresh = Duration::seconds(current.refresh_seconds);
            let recorded = calendar_feeds::record_failure(
                &mut tx,
                &row.gate,
                &row.window_name,
                now,
                now + backoff.min(refresh),
                &error,
            )
            .await?;
            announce(&mut tx, row, recorded.as_ref(), Some(&error), now).await?;
            tx.commit().await?;
        }
        Ok(recorded)
    }

    /// Announces feeds that turned stale since the last call (`calendar.stale`, once per
    /// spell: a successful fetch re-arms it). Returns how many.
    pub async fn announce_stale_feeds(&self) -> Result<usize> {
        let now = self.now();
        let mut tx = self.begin().await?;
        let rows = calendar_feeds::newly_stale(&mut tx, now).await?;
        for row in &rows {
            let since = row
                .published_fetched_at
                .map(|p| p + Duration::seconds(row.max_stale_seconds));
            crate::notify::enqueue(
                &mut tx,
                &crate::notify::NewEvent {
                    event_type: "calendar.stale".into(),
                    subject: format!("gate/{}", row.gate),
                    dedup_key: Some(format!(
                        "calendar.stale/{}/{}/{}",
                        row.gate,
                        row.window_name,
                        since.map_or_else(|| "never".to_string(), |s| s.to_rfc3339())
                    )),
                    occurred_at: since.unwrap_or(now),
                    gate: Some(row.gate.clone()),
                    clusters: Vec::new(),
                    data: serde_json::json!({
                        "gate": row.gate,
                        "window": row.window_name,
                        "url": crate::notify::calendars::display_url(&row.url),
                        "lastFetchAt": row.fetched_at,
                        "staleSince": since,
                        "error": row.last_error,
                    }),
                },
            )
            .await?;
            calendar_feeds::mark_stale_announced(
                &mut tx,
                &row.gate,
                &row.window_name,
                since.unwrap_or(now),
            )
            .await?;
            tracing::warn!(gate = %row.gate, window = %row.window_name, url = %crate::notify::calendars::display_url(&row.url), error = ?row.last_error, "calendar feed is stale");
        }
        tx.commit().await?;
        Ok(rows.len())
    }

    /// How many feeds are stale now, and how many failing (not stale yet).
    pub async fn feed_counts(&self) -> Result<(i64, i64)> {
        let mut conn = self.conn().await?;
        calendar_feeds::counts(&mut conn, self.now()).await
    }

    /// The feed status of every `calendar.url` window of `gate`.
    pub async fn feed_statuses(&self, gate: &str) -> Result<Vec<CalendarFeedStatus>> {
        let mut conn = self.conn().await?;
        let rows = calendar_feeds::for_gates(&mut conn, Some(&[gate.to_string()])).await?;
        let now = self.now();
        Ok(rows.iter().map(|r| status(r, now)).collect())
    }
}
