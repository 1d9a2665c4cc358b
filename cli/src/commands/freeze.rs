//! `freeze`, `unfreeze`, `freezes`: the emergency stop. Durations, instants and selectors
//! are checked locally first, so a typo fails before reaching the hub.

use fleetgate_api_types::{FreezeRecord, FreezeRequest, OverrideClusters};
use fleetgate_policy::LabelSelector;

use crate::args::{Format, FreezeArgs};
use crate::client::Client;
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn freeze(client: &Client, args: &FreezeArgs, format: Format) -> Result<()> {
    if args.reason.trim().is_empty() {
        return Err(Error::Usage("--reason must not be empty".into()));
    }
    if let Some(d) = &args.duration {
        fleetgate_policy::parse_duration(d)
            .map_err(|e| Error::Usage(format!("--for: {}", e.message)))?;
    }
    let until = match &args.until {
        None => None,
        Some(u) => Some(
            chrono::DateTime::parse_from_rfc3339(u)
                .map_err(|e| Error::Usage(format!("--until: not RFC 3339 ({e})")))?
                .to_utc(),
        ),
    };
    let selector = match &args.selector {
        Some(sel) => {
            Some(LabelSelector::parse(sel).map_err(|e| Error::Usage(format!("--selector: {e}")))?)
        }
        None => None,
    };
    let clusters = (!args.clusters.is_empty() || selector.is_some()).then(|| OverrideClusters {
        names: args.clusters.clone(),
        selector,
    });
    let body = FreezeRequest {
        reason: args.reason.clone(),
        clusters,
        duration: args.duration.clone(),
        until,
    };
    let f: FreezeRecord = client.post("/freezes", &[], &body).await?;
    output::print_answer(format, &f, |f| {
        format!(
            "frozen: {} until {} (freeze {})\n",
            clusters_text(f),
            until_text(f),
            f.id
        )
    })
}

pub async fn unfreeze(
    client: &Client,
    reason: &str,
    id: Option<&str>,
    format: Format,
) -> Result<()> {
    if reason.trim().is_empty() {
        return Err(Error::Usage("--reason must not be empty".into()));
    }
    // The hub checks the id (422 naming `id`); the CLI has no UUID type of its own.
    let body = serde_json::json!({ "reason": reason, "id": id });
    let ended: Vec<FreezeRecord> = client.post("/freezes/end", &[], &body).await?;
    output::print_answer(format, &ended, |ended| {
        ended
            .iter()
            .map(|f| {
                format!(
                    "unfrozen: {} (freeze {}: {})\n",
                    clusters_text(f),
                    f.id,
                    f.reason
                )
            })
            .collect()
    })
}

pub async fn list(client: &Client, all: bool, format: Format) -> Result<()> {
    let q = if all {
        vec![("all", "true".to_string())]
    } else {
        Vec::new()
    };
    let items: Vec<FreezeRecord> = client.get("/freezes", &q).await?;
    output::print_answer(format, &items, |items| render(items))
}

/// The freezes in force, as `fleetgate status` prints them above the table (empty: none).
pub fn banner(items: &[FreezeRecord], now: chrono::DateTime<chrono::Utc>) -> String {
    items
        .iter()
        .filter(|f| f.starts_at <= now && f.is_live(now))
        .map(|f| {
            format!(
                "FROZEN {} by {} until {}: {}\n",
                clusters_text(f),
                f.actor,
                until_text(f),
                f.reason
            )
        })
        .collect()
}

fn render(items: &[FreezeRecord]) -> String {
    if items.is_empty() {
        return "No freezes.\n".into();
    }
    let mut t = Table::new(&[
        "ID", "CLUSTERS", "SINCE", "UNTIL", "ACTOR", "REASON", "ENDED",
    ]);
    for f in items {
        t.row(vec![
            f.id.to_string(),
            clusters_text(f),
            output::time(&f.starts_at),
            until_text(f),
            f.actor.clone(),
            f.reason.clone(),
            match (&f.ended_at, &f.ended_by) {
                (Some(at), Some(by)) => format!("{} by {by}", output::time(at)),
                (Some(at), None) => output::time(at),
                _ => String::new(),
            },
        ]);
    }
    t.render()
}

fn clusters_text(f: &FreezeRecord) -> String {
    match &f.clusters {
        None => "every cluster".into(),
        Some(c) => super::overrides::scope(Some(c)),
    }
}

fn until_text(f: &FreezeRecord) -> String {
    match f.expires_at {
        Some(e) => output::time(&e),
        None => "unfrozen".into(),
    }
}
