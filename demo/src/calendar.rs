//! The demo's calendars. `examples/calendar-holiday-freeze.yaml` (an inline iCalendar of
//! public holidays on the prod clusters) is applied as it is. The feed of
//! `examples/calendar-maintenance.yaml` is served by the demo itself on loopback, behind
//! the `Authorization` header the hub reads from its secrets directory, so the demo makes
//! no call outside the machine and still shows a fetched feed: that gate is applied with
//! its `calendar.url` pointed at the demo's server. The demo waits (bounded) for the first
//! fetch and then prints what the hub says about both.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use fleetgate_api_types::{ClusterStatus, GateRecord};
use tokio_util::sync::CancellationToken;

use crate::error::other;
use fleetgate::client::Client;
use fleetgate::error::Result;

/// The example whose feed the demo serves, and the URL it names.
pub const MAINTENANCE_FILE: &str = "calendar-maintenance.yaml";
const EXAMPLE_URL: &str = "https://calendar.example.com/ops/maintenance.ics";
pub const MAINTENANCE_GATE: &str = "maintenance-windows";
pub const HOLIDAY_GATE: &str = "holiday-calendar";
/// The feed's secret: the file `ops-calendar` in the hub's secrets directory holds it.
const SECRET_NAME: &str = "ops-calendar";
const SECRET: &str = "Bearer demo-ops-calendar";

/// The ops team's maintenance calendar as Outlook exports it: a Windows zone name, a
/// weekly patch night with one instance moved and one cancelled, and a non-maintenance
/// event the window's `match` leaves out.
pub const FEED: &str = "BEGIN:VCALENDAR\r\n\
VERSION:2.0\r\n\
PRODID:-//Microsoft Corporation//Outlook 16.0 MIMEDIR//EN\r\n\
X-WR-CALNAME:Ops maintenance\r\n\
X-PUBLISHED-TTL:PT1H\r\n\
BEGIN:VEVENT\r\n\
UID:patch-night@ops.example\r\n\
SUMMARY:Maintenance: patch night\r\n\
DTSTART;TZID=GMT Standard Time:20260106T220000\r\n\
DTEND;TZID=GMT Standard Time:20260107T020000\r\n\
RRULE:FREQ=WEEKLY;BYDAY=TU\r\n\
EXDATE;TZID=GMT Standard Time:20261222T220000\r\n\
END:VEVENT\r\n\
BEGIN:VEVENT\r\n\
UID:patch-night@ops.example\r\n\
RECURRENCE-ID;TZID=GMT Standard Time:20261110T220000\r\n\
SUMMARY:Maintenance: patch night (moved)\r\n\
DTSTART;TZID=GMT Standard Time:20261112T220000\r\n\
DTEND;TZID=GMT Standard Time:20261113T020000\r\n\
END:VEVENT\r\n\
BEGIN:VEVENT\r\n\
UID:review@ops.example\r\n\
SUMMARY:Change advisory board\r\n\
DTSTART;TZID=GMT Standard Time:20260105T100000\r\n\
DTEND;TZID=GMT Standard Time:20260105T110000\r\n\
RRULE:FREQ=WEEKLY;BYDAY=MO\r\n\
END:VEVENT\r\n\
END:VCALENDAR\r\n";

async fn feed(headers: HeaderMap) -> Response {
    let authorized = headers
        .get(header::AUTHORIZATION)
        .is_some_and(|v| v.as_bytes() == SECRET.as_bytes());
    if !authorized {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/calendar; charset=utf-8")],
        FEED,
    )
        .into_response()
}

/// The demo's calendar server and the hub's secrets directory for it.
pub struct Served {
    /// The feed's URL on loopback.
    pub url: String,
    /// Holds `ops-calendar` (give it to the hub as `--calendar-secrets-dir`).
    pub secrets: tempfile::TempDir,
}

/// Starts the feed server on loopback until `stop`.
pub async fn serve(stop: &CancellationToken) -> Result<Served> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| other("calendar server", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| other("calendar server", e))?;
    let app = Router::new().route("/ops/maintenance.ics", get(feed));
    let stop = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
    });
    let secrets = tempfile::Builder::new()
        .prefix("fleetgate-demo-secrets-")
        .tempdir()
        .map_err(|e| other("secrets dir", e))?;
    std::fs::write(secrets.path().join(SECRET_NAME), SECRET)
        .map_err(|e| other("secrets dir", e))?;
    Ok(Served {
        url: format!("http://{addr}/ops/maintenance.ics"),
        secrets,
    })
}

/// The manifests to apply from `examples`: every one but the maintenance example, which
/// is written to `dir` with its feed URL pointed at `url`.
pub fn manifests(examples: &Path, url: &str, dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(examples)
        .map_err(|e| other("examples", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml"))
        .filter(|p| p.file_name().is_none_or(|n| n != MAINTENANCE_FILE))
        .collect();
    files.sort();
    let text = std::fs::read_to_string(examples.join(MAINTENANCE_FILE))
        .map_err(|e| other("examples", e))?;
    if !text.contains(EXAMPLE_URL) {
        return Err(other(
            "examples",
            format!("{MAINTENANCE_FILE} names no {EXAMPLE_URL}"),
        ));
    }
    let local = dir.join(MAINTENANCE_FILE);
    std::fs::write(&local, text.replace(EXAMPLE_URL, url)).map_err(|e| other("examples", e))?;
    files.push(local);
    Ok(files)
}

/// Waits (at most `limit`) for the hub's first fetch of the maintenance feed; returns the
/// gate as the hub has it then.
pub async fn wait_fetched(client: &Client, limit: Duration) -> Result<GateRecord> {
    let deadline = Instant::now() + limit;
    loop {
        let g: GateRecord = client
            .get(&format!("/gates/{MAINTENANCE_GATE}"), &[])
            .await?;
        let attempted = g.calendars.iter().all(|c| c.last_attempt_at.is_some());
        if attempted || Instant::now() >= deadline {
            return Ok(g);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The demo's calendar lines: the holiday gate on `cluster` as the hub evaluates it, and
/// the maintenance feed as the hub fetched it.
pub fn describe(status: &ClusterStatus, maintenance: &GateRecord) -> String {
    let holiday = match status.gates.iter().find(|g| g.gate == HOLIDAY_GATE) {
        Some(g) => {
            let next = g.next_transition.map_or_else(
                || "no change ahead".to_string(),
                |t| format!("next change {}", t.format("%Y-%m-%d %H:%M UTC")),
            );
            format!(
                "gate {HOLIDAY_GATE} (an inline iCalendar of public holidays) is {} on {}: {}; {next}",
                g.state, status.cluster.name, g.reason
            )
        }
        None => format!(
            "gate {HOLIDAY_GATE} does not apply to {}",
            status.cluster.name
        ),
    };
    let feeds: Vec<String> = maintenance
        .calendars
        .iter()
        .map(|f| {
            let how = match &f.error {
                Some(e) => format!("{}: {e}", f.state.as_str()),
                None => format!("{}, {} occurrences", f.state.as_str(), f.occurrences),
            };
            format!(
                "gate {MAINTENANCE_GATE} reads its feed from the demo itself at {} ({how})",
                f.url
            )
        })
        .collect();
    format!("{holiday}\n    {}", feeds.join("\n    "))
}
