//! `audit`: the hub's append-only audit log, newest first, with filters;
//! pages are followed until `--limit` entries are shown.

use chrono::Utc;
use chrono_tz::Tz;
use fleetgate_api_types::AuditEntry;

use crate::args::{AuditArgs, Format};
use crate::client::Client;
use crate::error::Result;
use crate::output::{self, Table};
use crate::timearg;

pub async fn run(client: &Client, args: &AuditArgs, format: Format) -> Result<()> {
    let now = Utc::now();
    let mut q: Vec<(&str, String)> = Vec::new();
    if let Some(a) = &args.actor {
        q.push(("actor", a.clone()));
    }
    if let Some(a) = &args.action {
        q.push(("action", a.clone()));
    }
    if let Some(k) = &args.kind {
        q.push(("targetKind", k.clone()));
    }
    if let Some(t) = &args.target {
        q.push(("target", t.clone()));
    }
    if let Some(p) = &args.person {
        q.push(("person", p.clone()));
    }
    if let Some(t) = &args.team {
        q.push(("team", t.clone()));
    }
    if let Some(s) = &args.since {
        let t = timearg::parse("--since", s, Tz::UTC, now)?;
        q.push(("since", crate::commands::preview::rfc3339(t)));
    }
    if let Some(u) = &args.until {
        let t = timearg::parse("--until", u, Tz::UTC, now)?;
        q.push(("until", crate::commands::preview::rfc3339(t)));
    }
    let items: Vec<AuditEntry> = client.list("/audit", &q, Some(args.limit.max(1))).await?;
    output::print_answer(format, &items, |items| render(items))
}

fn render(items: &[AuditEntry]) -> String {
    if items.is_empty() {
        return "No audit entries.\n".into();
    }
    let mut t = Table::new(&["AT", "ACTOR", "ACTION", "TARGET", "REASON"]);
    for e in items {
        t.row(vec![
            output::time(&e.at),
            e.actor.clone(),
            e.action.clone(),
            format!("{}/{}", e.target_kind, e.target_name),
            e.reason.clone().unwrap_or_default(),
        ]);
    }
    t.render()
}
