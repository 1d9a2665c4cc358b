//! Notifications: events about gates, overrides, spokes and rollouts,
//! written to a PostgreSQL outbox in the same transaction as the change
//! that caused them ([`enqueue`]), window edges found by a scheduler that
//! wakes at the fleet's next transition ([`schedule`]), and delivery to
//! webhook subscriptions by workers on every replica ([`deliver`]) in the
//! Standard Webhooks, CloudEvents, Slack or Teams format ([`format`]).
//! Guide: `docs/notifications.md`.
//!
//! Other parts of the hub add their events with one call inside their write
//! transaction:
//!
//! ```ignore
//! crate::notify::enqueue(tx, &NewEvent { event_type: "approval.pending".into(), .. }).await?;
//! ```

pub mod calendars;
pub mod event;
pub mod format;
pub(crate) mod freezes;
pub(crate) mod held;
pub(crate) mod manifest;
pub mod notice;
pub(crate) mod overrides;
pub(crate) mod rollouts;
pub mod schedule;
pub mod spokes;

use std::time::Duration;

use clap::Args;
use sqlx::PgConnection;

pub use event::{Cause, EVENT_TYPES, NewEvent};

/// Enqueues `ev` in the caller's transaction (a write's `tx`): inserted
/// unless its dedup key exists, numbered in its subject's sequence and
/// routed to every subscription that selects it. `Some(id)` if inserted.
pub async fn enqueue(conn: &mut PgConnection, ev: &NewEvent) -> crate::Result<Option<i64>> {
    crate::db::outbox::enqueue(conn, ev).await
}

/// Enqueues the `gate.opened`/`gate.closed` of a write or an edge of `gate`
/// (its definition after the change; `None`: deleted), each keyed by its
/// instant (the key the scheduler uses for that instant, so the write and a
/// scan seeing the same change make one event), or by `key` when given. A
/// rollout gate's openings name only clusters already released
/// ([`rollouts::only_released_opens`]). Returns how many were inserted.
pub(crate) async fn enqueue_transitions(
    conn: &mut PgConnection,
    gate: Option<&fleetgate_policy::Gate>,
    transitions: Vec<event::GateTransition>,
    key: Option<&str>,
) -> crate::Result<usize> {
    enqueue_transitions_among(conn, gate, transitions, key, None).await
}

/// [`enqueue_transitions`] by a write that holds every cluster's name and labels read in
/// its transaction (`known`): routing looks the events' clusters up there
/// ([`crate::db::outbox::enqueue_among`]).
pub(crate) async fn enqueue_transitions_among(
    conn: &mut PgConnection,
    gate: Option<&fleetgate_policy::Gate>,
    transitions: Vec<event::GateTransition>,
    key: Option<&str>,
    known: Option<&[crate::db::clusters::Scoped]>,
) -> crate::Result<usize> {
    let mut inserted = 0;
    for t in rollouts::only_released_opens(conn, gate, transitions).await? {
        let ev = match key {
            Some(k) => t.keyed(k),
            None => t.into_event(),
        };
        inserted += usize::from(
            crate::db::outbox::enqueue_among(conn, &ev, known)
                .await?
                .is_some(),
        );
    }
    Ok(inserted)
}

/// Defaults of the notification flags.
pub mod defaults {
    /// `--webhook-retry-schedule`: about a day of retries.
    pub const RETRY_SCHEDULE: &str = "5s,5m,30m,2h,5h,10h,10h";
    pub const UPCOMING: &str = "1h";
    pub const LEASE: &str = "30s";
    pub const POLL: &str = "250ms";
    pub const DISABLE_AFTER: &str = "120h";
}

/// Notification flags of `fleetgate-hub serve`.
#[derive(Debug, Clone, Args)]
pub struct NotifyOptions {
    /// Let webhooks reach loopback and private addresses (in-house
    /// receivers, tests); link-local (cloud metadata) stays refused.
    #[arg(long, env = "FLEETGATE_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// Let webhooks use plain `http://` URLs.
    #[arg(long, env = "FLEETGATE_WEBHOOK_ALLOW_HTTP")]
    pub webhook_allow_http: bool,
    /// The dashboard's public URL, for links in messages and the CloudEvents `source`.
    #[arg(long, env = "FLEETGATE_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Lead times of `gate.upcoming` notices, comma-separated (`1h,15m`; empty: none).
    #[arg(long, env = "FLEETGATE_NOTIFY_UPCOMING", default_value = defaults::UPCOMING)]
    pub notify_upcoming: String,
    /// Waits after each failed delivery attempt, comma-separated; after the
    /// last the delivery has failed.
    #[arg(long, env = "FLEETGATE_WEBHOOK_RETRY_SCHEDULE", default_value = defaults::RETRY_SCHEDULE)]
    pub webhook_retry_schedule: String,
    /// How long a replica owns a delivery it sends; if it dies, another
    /// replica sends it again after this.
    #[arg(long, env = "FLEETGATE_WEBHOOK_LEASE", default_value = defaults::LEASE, value_parser = crate::options::parse_std_duration)]
    pub webhook_lease: Duration,
    /// How often idle delivery workers look for due deliveries.
    #[arg(long, env = "FLEETGATE_WEBHOOK_POLL", default_value = defaults::POLL, value_parser = crate::options::parse_std_duration)]
    pub webhook_poll: Duration,
    /// Disable an endpoint (with an audit entry) after every delivery failed for this long.
    #[arg(long, env = "FLEETGATE_WEBHOOK_DISABLE_AFTER", default_value = defaults::DISABLE_AFTER, value_parser = crate::options::parse_std_duration)]
    pub webhook_disable_after: Duration,
    /// Send `spoke.disconnected` once a spoke has been gone this long.
    #[arg(long, env = "FLEETGATE_NOTIFY_SPOKE_GRACE", default_value = spokes::DEFAULT_GRACE, value_parser = crate::options::parse_std_duration)]
    pub notify_spoke_grace: Duration,
}

impl Default for NotifyOptions {
    fn default() -> Self {
        let d = |s| crate::options::parse_std_duration(s).expect("valid default duration");
        Self {
            webhook_allow_private: false,
            webhook_allow_http: false,
            public_url: None,
            notify_upcoming: defaults::UPCOMING.into(),
            webhook_retry_schedule: defaults::RETRY_SCHEDULE.into(),
            webhook_lease: d(defaults::LEASE),
            webhook_poll: d(defaults::POLL),
            webhook_disable_after: d(defaults::DISABLE_AFTER),
            notify_spoke_grace: d(spokes::DEFAULT_GRACE),
        }
    }
}

impl NotifyOptions {
    /// The `gate.upcoming` lead times.
    pub fn leads(&self) -> Result<Vec<chrono::Duration>, String> {
        self.notify_upcoming
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                fleetgate_policy::parse_duration(s)
                    .map_err(|e| format!("--notify-upcoming {s}: {}", e.message))
            })
            .collect()
    }
}
