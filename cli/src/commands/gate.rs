//! `gate validate|apply|diff|list|get|delete`: gates as code. Apply is
//! idempotent: it compares the parsed manifests (not the text), so
//! formatting and defaulted fields never cause a spurious update.

use fleetgate_api_types::GateRecord;
use fleetgate_policy::Gate;
use serde::de::IgnoredAny;
use serde_json::{Value, json};

use crate::args::Format;
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::manifests::{self, Loaded};
use crate::output::{self, Table};

/// Validates every manifest, reporting each invalid one on stderr (the last
/// one becomes the command's error, so the exit code is 6).
pub fn validate(files: &[std::path::PathBuf], format: Format) -> Result<()> {
    let mut loaded = Vec::new();
    let mut errors = Vec::new();
    for file in manifests::expand(files)? {
        match manifests::load_file(&file) {
            Ok(l) => loaded.extend(l),
            Err(e) => errors.push(e),
        }
    }
    if let Err(e) = manifests::check_unique(&loaded) {
        errors.push(e);
    }
    if loaded.is_empty() && errors.is_empty() {
        return Err(Error::Usage("no gate manifests found".into()));
    }
    let results: Vec<Value> = loaded
        .iter()
        .map(|l| {
            let warnings: Vec<Value> = l
                .gate
                .warnings()
                .iter()
                .map(|w| json!({"path": w.path, "message": w.message}))
                .collect();
            let rollout = l.gate.spec.rollout.as_ref().map(|r| r.describe());
            json!({"source": l.source, "gate": l.gate.name(), "valid": true,
                   "limitations": l.gate.limitations(), "warnings": warnings,
                   "rollout": rollout})
        })
        .collect();
    print_warnings(&loaded);
    output::print(format, &results, |rs| {
        rs.iter()
            .map(|r| {
                let mut line = format!(
                    "{}: gate '{}' is valid\n",
                    output::s(r, "source"),
                    output::s(r, "gate")
                );
                // What the mode cannot hold back, so nobody learns it from an incident.
                for note in r["limitations"].as_array().into_iter().flatten() {
                    line.push_str(&format!("  note: {}\n", note.as_str().unwrap_or_default()));
                }
                // The waves as the hub will run them, so a typo in a selector shows here.
                for wave in r["rollout"].as_array().into_iter().flatten() {
                    line.push_str(&format!(
                        "  rollout: {}\n",
                        wave.as_str().unwrap_or_default()
                    ));
                }
                line
            })
            .collect()
    })?;
    let last = errors.pop();
    for e in &errors {
        eprintln!("error: {}", e.render());
    }
    last.map_or(Ok(()), Err)
}

/// Prints on stderr each field of `loaded` that is valid but reads differently than the
/// author may expect (cron schedules whose days changed with the Kubernetes CronJob rules).
pub(super) fn print_warnings(loaded: &[Loaded]) {
    for l in loaded {
        for w in l.gate.warnings() {
            eprintln!("warning: {}: gate '{}': {w}", l.source, l.gate.name());
        }
    }
}

/// What `apply` did (or, for diff, would do) with one gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Created,
    Configured,
    Unchanged,
}

impl Action {
    fn as_str(self) -> &'static str {
        match self {
            Action::Created => "created",
            Action::Configured => "configured",
            Action::Unchanged => "unchanged",
        }
    }
}

/// The hub's current copy of a gate: manifest + ETag for If-Match.
struct Current {
    gate: Gate,
    etag: Option<String>,
}

async fn current(client: &Client, name: &str) -> Result<Option<Current>> {
    match client
        .get_full::<GateRecord>(&format!("/gates/{}", seg(name)))
        .await
    {
        Ok(resp) => {
            let gate = fleetgate_policy::parse_gate_json(resp.body.manifest).map_err(|e| {
                Error::Other(format!(
                    "the hub returned gate '{name}' in an unexpected shape: {e}"
                ))
            })?;
            let etag = resp
                .etag
                .or_else(|| Some(format!("\"{}\"", resp.body.version)));
            Ok(Some(Current { gate, etag }))
        }
        Err(Error::Api { status: 404, .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

pub async fn apply(
    client: &Client,
    files: &[std::path::PathBuf],
    reason: &Option<String>,
    prune: bool,
    format: Format,
) -> Result<()> {
    let q = crate::client::reason(reason);
    let loaded = manifests::load_all(files)?;
    print_warnings(&loaded);
    let mut results = Vec::new();
    for Loaded { gate, .. } in &loaded {
        let name = gate.name().to_string();
        let action = match current(client, &name).await? {
            None => {
                client.post::<_, IgnoredAny>("/gates", &q, gate).await?;
                Action::Created
            }
            Some(cur) if cur.gate == *gate => Action::Unchanged,
            Some(cur) => {
                client
                    .put::<_, IgnoredAny>(
                        &format!("/gates/{}", seg(&name)),
                        &q,
                        gate,
                        cur.etag.as_deref(),
                    )
                    .await?;
                Action::Configured
            }
        };
        if format == Format::Table {
            // Print as we go so a failure later still shows what was done.
            println!("gate/{name} {}", action.as_str());
        }
        results.push(json!({"gate": name, "action": action.as_str()}));
    }
    if prune {
        // Only after every file applied cleanly: a bad file must not turn
        // into deletions.
        for g in client.list::<GateRecord>("/gates", &[], None).await? {
            let name = g.name;
            if name.is_empty() || loaded.iter().any(|l| l.gate.name() == name) {
                continue;
            }
            client
                .delete::<()>(&format!("/gates/{}", seg(&name)), &q)
                .await?;
            if format == Format::Table {
                println!("gate/{name} pruned");
            }
            results.push(json!({"gate": name, "action": "pruned"}));
        }
    }
    if format != Format::Table {
        output::print(format, &results, |_| String::new())?;
    }
    Ok(())
}

pub async fn diff(
    client: &Client,
    files: &[std::path::PathBuf],
    exit_code: bool,
    format: Format,
) -> Result<()> {
    let loaded = manifests::load_all(files)?;
    let mut results = Vec::new();
    let mut any = false;
    for l in &loaded {
        let name = l.gate.name();
        let cur = current(client, name).await?;
        let new_yaml = yaml(&l.gate)?;
        let (old_yaml, action) = match &cur {
            None => (String::new(), Action::Created),
            Some(c) if c.gate == l.gate => (yaml(&c.gate)?, Action::Unchanged),
            Some(c) => (yaml(&c.gate)?, Action::Configured),
        };
        let text = if action == Action::Unchanged {
            None
        } else {
            crate::diff::unified(
                &format!("hub/gates/{name}"),
                &l.source,
                &old_yaml,
                &new_yaml,
            )
        };
        any |= action != Action::Unchanged;
        if format == Format::Table
            && let Some(t) = &text
        {
            print!("{t}");
        }
        results.push(json!({"gate": name, "action": action.as_str(), "diff": text}));
    }
    if format != Format::Table {
        output::print(format, &results, |_| String::new())?;
    }
    if exit_code && any {
        return Err(Error::Different);
    }
    Ok(())
}

fn yaml(gate: &Gate) -> Result<String> {
    fleetgate_policy::yaml::to_string(gate).map_err(|e| Error::Other(e.to_string()))
}

pub async fn list(client: &Client, format: Format) -> Result<()> {
    let items: Vec<GateRecord> = client.list("/gates", &[], None).await?;
    output::print_answer(format, &items, |items| {
        let mut t = Table::new(&[
            "NAME",
            "MODE",
            "DEFAULT",
            "ZONE",
            "WINDOWS",
            "VERSION",
            "DESCRIPTION",
        ]);
        for g in items {
            let m = &g.manifest;
            let spec = m.get("spec").cloned().unwrap_or(Value::Null);
            let windows = spec
                .get("windows")
                .and_then(|w| w.as_array())
                .map(|w| {
                    w.iter()
                        .map(|x| format!("{}:{}", output::s(x, "kind"), output::s(x, "name")))
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            t.row(vec![
                m.pointer("/metadata/name")
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string(),
                non_empty(output::s(&spec, "mode"), "suspend"),
                non_empty(output::s(&spec, "default"), "open"),
                non_empty(output::s(&spec, "timeZone"), "UTC"),
                non_empty(windows, "<none>"),
                g.version.to_string(),
                output::s(&spec, "description"),
            ]);
        }
        if t.is_empty() {
            "No gates.\n".to_string()
        } else {
            t.render()
        }
    })
}

fn non_empty(s: String, default: &str) -> String {
    if s.is_empty() { default.to_string() } else { s }
}

/// The `Calendar feeds:` section of `gate get`: each `calendar.url` window's
/// last fetch, last change, error and staleness as the hub reports them.
fn feed_lines(
    feeds: &[fleetgate_api_types::records::CalendarFeedStatus],
    now: chrono::DateTime<chrono::Utc>,
) -> String {
    use fleetgate_api_types::records::CalendarFeedState;
    if feeds.is_empty() {
        return String::new();
    }
    let when = |t: Option<chrono::DateTime<chrono::Utc>>| match t {
        None => "never".to_string(),
        Some(t) => format!("{} ({} ago)", t.format("%Y-%m-%d %H:%M:%SZ"), ago(now - t)),
    };
    let mut text = String::from("Calendar feeds:\n");
    for f in feeds {
        let state = match f.state {
            CalendarFeedState::Stale => "STALE (onStale applies)",
            CalendarFeedState::Failing => "failing (last good copy in use)",
            CalendarFeedState::NotFetched => "not fetched yet",
            CalendarFeedState::Ok => "ok",
        };
        text.push_str(&format!("  - window {}: {} — {state}\n", f.window, f.url));
        text.push_str(&format!("      last fetch:  {}\n", when(f.last_fetch_at)));
        text.push_str(&format!("      last change: {}\n", when(f.last_change_at)));
        if let Some(e) = &f.error {
            text.push_str(&format!(
                "      error:       {e} ({} failed attempts)\n",
                f.failures
            ));
        }
        if let Some(at) = f.stale_at.filter(|_| !f.stale) {
            text.push_str(&format!(
                "      stale at:    {}\n",
                at.format("%Y-%m-%d %H:%M:%SZ")
            ));
        }
        text.push_str(&format!(
            "      next fetch:  {}; {} occurrences sent to spokes\n",
            f.next_fetch_at.format("%Y-%m-%d %H:%M:%SZ"),
            f.occurrences
        ));
        for r in &f.rejected {
            text.push_str(&format!("      skipped:     {r}\n"));
        }
    }
    text
}

/// A duration for people: `3d4h`, `2h5m`, `40s`.
fn ago(d: chrono::Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86400, s % 86400 / 3600),
    }
}

pub async fn get(client: &Client, name: &str, format: Format) -> Result<()> {
    let g: GateRecord = client.get(&format!("/gates/{}", seg(name)), &[]).await?;
    match format {
        // The manifest alone, so `get -o yaml > gate.yaml` round-trips through
        // apply; through the Gate type so fields keep the manifest's order.
        Format::Yaml | Format::Json => {
            match fleetgate_policy::parse_gate_json(g.manifest.clone()) {
                Ok(gate) => output::print(format, &gate, |_| String::new()),
                Err(_) => output::print(format, &g.manifest, |_| String::new()),
            }
        }
        Format::Table => {
            let m = g.manifest;
            let mut text = String::new();
            text.push_str(&format!("Name:        {name}\n"));
            text.push_str(&format!("Version:     {}\n", g.version));
            if let Ok(gate) = fleetgate_policy::parse_gate_json(m.clone())
                && let Ok(compiled) = gate.compile()
            {
                text.push_str(&format!(
                    "Description: {}\n",
                    gate.spec.description.clone().unwrap_or_default()
                ));
                text.push_str(&format!("Time zone:   {}\n", compiled.time_zone().name()));
                text.push_str("Rules:\n");
                for line in compiled.describe() {
                    text.push_str(&format!("  - {line}\n"));
                }
                for note in gate.limitations() {
                    text.push_str(&format!("Note:        {note}\n"));
                }
            }
            text.push_str(&feed_lines(&g.calendars, chrono::Utc::now()));
            text.push_str("Manifest:\n");
            let y = match fleetgate_policy::parse_gate_json(m.clone()) {
                Ok(gate) => yaml(&gate)?,
                Err(_) => fleetgate_policy::yaml::to_string(&m)
                    .map_err(|e| Error::Other(e.to_string()))?,
            };
            for line in y.lines() {
                text.push_str(&format!("  {line}\n"));
            }
            print!("{text}");
            Ok(())
        }
    }
}

pub async fn delete(
    client: &Client,
    name: &str,
    reason: &Option<String>,
    format: Format,
) -> Result<()> {
    client
        .delete::<()>(
            &format!("/gates/{}", seg(name)),
            &crate::client::reason(reason),
        )
        .await?;
    let v = json!({"gate": name, "action": "deleted"});
    output::print(format, &v, |_| format!("gate/{name} deleted\n"))
}

#[cfg(test)]
mod feed_tests {
    use chrono::{Duration, TimeZone, Utc};
    use fleetgate_api_types::records::{CalendarFeedState, CalendarFeedStatus};

    use super::feed_lines;

    #[test]
    fn feed_status_says_stale_failing_and_when() {
        let now = Utc.with_ymd_and_hms(2026, 11, 27, 12, 0, 0).unwrap();
        let feed = CalendarFeedStatus {
            window: "cab".into(),
            url: "https://cal.example.com/cab.ics".into(),
            state: CalendarFeedState::Stale,
            last_fetch_at: Some(now - Duration::hours(30)),
            last_change_at: Some(now - Duration::days(3)),
            last_attempt_at: Some(now - Duration::minutes(5)),
            error: Some("HTTP 500".into()),
            failures: 7,
            next_fetch_at: now + Duration::minutes(10),
            stale: true,
            stale_at: Some(now - Duration::hours(6)),
            occurrences: 12,
            rejected: vec!["line 58, DTSTART: unknown time zone 'Mars/Base'".into()],
        };
        let text = feed_lines(std::slice::from_ref(&feed), now);
        assert!(
            text.contains("window cab: https://cal.example.com/cab.ics — STALE"),
            "{text}"
        );
        assert!(
            text.contains("last fetch:  2026-11-26 06:00:00Z (1d6h ago)"),
            "{text}"
        );
        assert!(
            text.contains("error:       HTTP 500 (7 failed attempts)"),
            "{text}"
        );
        assert!(text.contains("skipped:     line 58"), "{text}");
        let ok = CalendarFeedStatus {
            state: CalendarFeedState::Ok,
            stale: false,
            error: None,
            ..feed.clone()
        };
        let text = feed_lines(&[ok], now);
        assert!(text.contains("— ok"), "{text}");
        assert!(text.contains("stale at:"), "{text}");
        // Never attempted: neither stale nor empty, and no fetch times to show.
        let new = CalendarFeedStatus {
            state: CalendarFeedState::NotFetched,
            stale: false,
            error: None,
            failures: 0,
            last_fetch_at: None,
            last_change_at: None,
            last_attempt_at: None,
            stale_at: None,
            occurrences: 0,
            rejected: vec![],
            ..feed
        };
        let text = feed_lines(&[new], now);
        assert!(text.contains("— not fetched yet"), "{text}");
        assert!(text.contains("last fetch:  never"), "{text}");
        assert!(!text.contains("STALE"), "{text}");
        assert!(feed_lines(&[], now).is_empty());
    }
}
