//! The calendar feed refresher every replica runs: each tick it claims the feeds that are due
//! (a row lease in PostgreSQL, so one replica fetches a feed per refresh and a dead replica's
//! claim runs out), fetches them through the shared [`crate::egress`] client with a
//! conditional GET (ETag / Last-Modified) and the feed's `Authorization` secret, and records
//! the outcome ([`Service::record_feed_fetch`]); then it announces feeds that turned stale.
//! Time comes from the service's injectable clock. Guide: `docs/calendars.md`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use reqwest::Method;
use reqwest::header::{AUTHORIZATION, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED};
use tokio_util::sync::CancellationToken;

use crate::db::calendar_feeds::FeedRow;
use crate::egress::{Egress, EgressOptions};
use crate::service::Service;
use crate::service::calendars::{Fetched, Recorded};

/// Calendar feed flags of `fleetgate-hub serve`.
#[derive(Debug, Clone, Args)]
pub struct CalendarOptions {
    /// Let calendar feeds be fetched from loopback and private addresses (in-house calendar
    /// servers, tests); link-local (cloud metadata) stays refused.
    #[arg(long, env = "FLEETGATE_CALENDAR_ALLOW_PRIVATE")]
    pub calendar_allow_private: bool,
    /// Let calendar feeds use plain `http://` URLs.
    #[arg(long, env = "FLEETGATE_CALENDAR_ALLOW_HTTP")]
    pub calendar_allow_http: bool,
    /// Directory of feed secrets: `calendar.auth.secretRef.name` is a file in it whose content
    /// is sent as the `Authorization` header (mount a Kubernetes Secret here).
    #[arg(long, env = "FLEETGATE_CALENDAR_SECRETS_DIR")]
    pub calendar_secrets_dir: Option<PathBuf>,
    /// How often a replica looks for due feeds.
    #[arg(long, env = "FLEETGATE_CALENDAR_TICK", default_value = "5s", value_parser = crate::options::parse_std_duration)]
    pub calendar_tick: Duration,
}

impl Default for CalendarOptions {
    fn default() -> Self {
        Self {
            calendar_allow_private: false,
            calendar_allow_http: false,
            calendar_secrets_dir: None,
            calendar_tick: Duration::from_secs(5),
        }
    }
}

/// Feed metrics, registered in the hub's registry (prefix `fleetgate_hub_`).
#[derive(Debug, Clone, Default)]
pub struct CalendarMetrics {
    /// `fleetgate_hub_calendar_fetches_total{outcome}`.
    pub fetches: Family<Vec<(String, String)>, Counter>,
    /// `fleetgate_hub_calendar_stale_total`: feeds that turned stale.
    pub stale: Counter,
    /// `fleetgate_hub_calendar_feeds_stale`: feeds stale now (set every refresher tick).
    pub stale_now: Gauge,
    /// `fleetgate_hub_calendar_feeds_failing`: feeds whose last fetch failed or was refused,
    /// not stale yet (set every refresher tick).
    pub failing_now: Gauge,
}

impl CalendarMetrics {
    /// Registers the metrics (the registry adds the hub's `fleetgate_hub_` prefix).
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "calendar_fetches",
            "Calendar feed fetches by outcome (changed, republished, unchanged, failed, lost)",
            self.fetches.clone(),
        );
        r.register(
            "calendar_stale",
            "Calendar feeds that turned stale (not fetched for maxStale)",
            self.stale.clone(),
        );
        r.register(
            "calendar_feeds_stale",
            "Calendar feeds stale now (no good copy for maxStale; onStale applies)",
            self.stale_now.clone(),
        );
        r.register(
            "calendar_feeds_failing",
            "Calendar feeds whose last fetch failed or was refused (the last good copy in force), not stale yet",
            self.failing_now.clone(),
        );
    }
}

/// One replica's feed refresher.
#[derive(Debug, Clone)]
pub struct CalendarSync {
    pub egress: Egress,
    pub secrets_dir: Option<PathBuf>,
    pub replica: String,
    pub tick: Duration,
    pub metrics: CalendarMetrics,
}

/// Feeds claimed per tick.
const CLAIM_BATCH: i64 = 16;

impl CalendarSync {
    /// From the flags.
    pub fn new(
        opts: &CalendarOptions,
        egress: &EgressOptions,
        replica: String,
        metrics: CalendarMetrics,
    ) -> Result<Self, String> {
        let policy = egress
            .policy()
            .map_err(|e| e.to_string())?
            .allow_private(opts.calendar_allow_private)
            .allow_http(opts.calendar_allow_http);
        Ok(Self {
            egress: Egress::new(policy).map_err(|e| e.to_string())?,
            secrets_dir: opts.calendar_secrets_dir.clone(),
            replica,
            tick: opts.calendar_tick,
            metrics,
        })
    }

    /// The claim lease: a fetch (timeout) plus its recording, with room.
    fn lease(&self) -> chrono::Duration {
        chrono::Duration::from_std(self.egress.policy().timeout * 2 + Duration::from_secs(30))
            .unwrap_or(chrono::Duration::minutes(2))
    }

    /// Runs until `stop`.
    pub async fn run(self, service: Service, stop: CancellationToken) {
        let mut tick = tokio::time::interval(self.tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(e) = self.step(&service).await {
                tracing::warn!(error = %e, "calendar refresh step failed");
            }
        }
    }

    /// One tick: fetch every due feed this replica can claim, then announce stale ones.
    /// Returns what each fetch recorded.
    pub async fn step(&self, service: &Service) -> crate::Result<Vec<Recorded>> {
        let claimed = service
            .claim_due_feeds(&self.replica, self.lease(), CLAIM_BATCH)
            .await?;
        let mut recorded = Vec::with_capacity(claimed.len());
        for row in &claimed {
            let outcome = self.fetch(row).await;
            if let Err(e) = &outcome {
                tracing::warn!(gate = %row.gate, window = %row.window_name, url = %crate::notify::calendars::display_url(&row.url), error = %e, "calendar feed fetch failed");
            }
            let r = service
                .record_feed_fetch(&self.replica, row, outcome)
                .await?;
            self.metrics
                .fetches
                .get_or_create(&vec![("outcome".into(), format!("{r:?}").to_lowercase())])
                .inc();
            recorded.push(r);
        }
        let stale = service.announce_stale_feeds().await?;
        self.metrics.stale.inc_by(stale as u64);
        let (stale_now, failing_now) = service.feed_counts().await?;
        self.metrics.stale_now.set(stale_now);
        self.metrics.failing_now.set(failing_now);
        Ok(recorded)
    }

    /// One conditional GET of `row`'s feed.
    async fn fetch(&self, row: &FeedRow) -> Result<Fetched, String> {
        let url = match row.url.strip_prefix("webcal://") {
            Some(rest) => format!("https://{rest}"),
            None => row.url.clone(),
        };
        let mut req = self
            .egress
            .request(Method::GET, &url)
            .map_err(|e| e.to_string())?
            .header("accept", "text/calendar, */*;q=0.5");
        if let Some(etag) = &row.etag {
            req = req.header(IF_NONE_MATCH, etag);
        }
        if let Some(lm) = &row.last_modified {
            req = req.header(IF_MODIFIED_SINCE, lm);
        }
        if let Some(secret) = self.secret_for(row)? {
            req = req.header(AUTHORIZATION, secret);
        }
        let resp = self.egress.send(req).await.map_err(|e| e.to_string())?;
        if resp.status == reqwest::StatusCode::NOT_MODIFIED {
            return Ok(Fetched::NotModified);
        }
        if !resp.status.is_success() {
            return Err(format!("HTTP {}", resp.status));
        }
        let header = |name| {
            resp.headers
                .get(name)
                .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
                .map(str::to_string)
        };
        let (etag, last_modified) = (header(ETAG), header(LAST_MODIFIED));
        let body = resp.body_within_cap().map_err(|e| e.to_string())?;
        let text = String::from_utf8(body.to_vec())
            .map_err(|_| "the feed is not UTF-8 text".to_string())?;
        Ok(Fetched::Body {
            text,
            etag,
            last_modified,
        })
    }

    /// The `Authorization` value for `row`'s window, read from the secrets directory.
    fn secret_for(&self, row: &FeedRow) -> Result<Option<String>, String> {
        let Some(name) = &row.secret_name else {
            return Ok(None);
        };
        let dir = self.secrets_dir.as_ref().ok_or_else(|| {
            format!("auth.secretRef '{name}' needs --calendar-secrets-dir on the hub")
        })?;
        let value = std::fs::read_to_string(dir.join(name))
            .map_err(|e| format!("auth.secretRef '{name}': {e}"))?;
        Ok(Some(value.trim().to_string()))
    }
}
