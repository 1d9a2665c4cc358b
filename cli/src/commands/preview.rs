//! `gate preview`: the state at `--from` and every change until `--to`,
//! computed offline from a manifest (the policy crate) or by the hub (which
//! also knows the active overrides). Both give the same JSON.

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use fleetgate_api_types::GateRecord;
use fleetgate_policy::RolloutEstimate;
use serde::{Deserialize, Serialize};

use crate::args::{Format, PreviewArgs};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};
use crate::{manifests, timearg};

/// The largest range a preview may span (the hub caps it the same way).
const MAX_RANGE_DAYS: i64 = 366;

pub fn offline(args: &PreviewArgs, format: Format) -> Result<()> {
    let path = args
        .file
        .as_ref()
        .ok_or_else(|| Error::Usage("gate preview needs -f FILE or a gate NAME".into()))?;
    let loaded = manifests::load_file(path)?;
    if loaded.len() != 1 {
        return Err(Error::Usage(format!(
            "{}: holds {} gates; preview takes a file with one gate",
            path.display(),
            loaded.len()
        )));
    }
    let l = &loaded[0];
    let compiled = l.gate.compile().map_err(|e| Error::invalid(&l.source, e))?;
    let zone = compiled.time_zone();
    let (from, to) = range(args, zone, Utc::now())?;
    // Calendars expanded over the requested range, exactly as the hub does (feeds count as
    // never fetched offline).
    let preview = l
        .gate
        .preview_over(Utc::now(), from, to, Vec::new(), &[])
        .map_err(|e| Error::invalid(&l.source, e))?;
    // The same shape the hub answers with (the policy crate's `Preview` serialised).
    let out: PreviewOut = serde_json::to_value(&preview)
        .and_then(serde_json::from_value)
        .map_err(|e| Error::Other(format!("unexpected preview shape: {e}")))?;
    print_preview(format, &out, zone)?;
    print_limitations(&l.gate);
    Ok(())
}

/// What the gate's mode cannot hold back, on stderr (the JSON on stdout keeps its shape).
fn print_limitations(gate: &fleetgate_policy::Gate) {
    for note in gate.limitations() {
        eprintln!("note: {note}");
    }
}

pub async fn from_hub(client: &Client, args: &PreviewArgs, format: Format) -> Result<()> {
    let name = args
        .name
        .as_deref()
        .ok_or_else(|| Error::Usage("gate preview needs -f FILE or a gate NAME".into()))?;
    // The gate's zone reads local --from/--to and renders the table.
    let gate: GateRecord = client.get(&format!("/gates/{}", seg(name)), &[]).await?;
    let zone = gate_zone(&gate);
    let (from, to) = range(args, zone, Utc::now())?;
    let out: PreviewOut = client
        .get(
            &format!("/gates/{}/preview", seg(name)),
            &[("from", rfc3339(from)), ("to", rfc3339(to))],
        )
        .await?;
    print_preview(format, &out, zone)?;
    if let Ok(gate) = fleetgate_policy::parse_gate_json(gate.manifest) {
        print_limitations(&gate);
    }
    Ok(())
}

/// The preview JSON with its keys in the documented order (serde_json's
/// `Value` would sort them): `gate`, `initial{state,reason}`,
/// `transitions[{at,state,reason}]`, and for a rollout gate `rollouts` (each opening's
/// estimated wave release times) — the same from a file and from the hub.
#[derive(Debug, Serialize, Deserialize)]
pub struct PreviewOut {
    gate: String,
    initial: StateOut,
    transitions: Vec<TransitionOut>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    rollouts: Vec<RolloutEstimate>,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct StateOut {
    state: String,
    reason: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct TransitionOut {
    at: String,
    state: String,
    reason: String,
}

fn print_preview(format: Format, out: &PreviewOut, zone: Tz) -> Result<()> {
    output::print(format, out, |out| render_table(out, zone))
}

/// `spec.timeZone` of a gate as the hub returns it; UTC when absent.
pub fn gate_zone(gate: &GateRecord) -> Tz {
    gate.manifest
        .pointer("/spec/timeZone")
        .and_then(|v| v.as_str())
        .and_then(|z| z.parse().ok())
        .unwrap_or(Tz::UTC)
}

fn range(
    args: &PreviewArgs,
    zone: Tz,
    now: DateTime<Utc>,
) -> Result<(DateTime<Utc>, DateTime<Utc>)> {
    let from = match &args.from {
        Some(v) => timearg::parse("--from", v, zone, now)?,
        None => now,
    };
    let to = match &args.to {
        Some(v) => timearg::parse("--to", v, zone, now)?,
        None => from + Duration::days(7),
    };
    if to <= from {
        return Err(Error::Usage("--to must be after --from".into()));
    }
    if to - from > Duration::days(MAX_RANGE_DAYS) {
        return Err(Error::Usage(format!(
            "--from/--to span more than {MAX_RANGE_DAYS} days"
        )));
    }
    Ok((from, to))
}

pub fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The preview for people: one row for the state at --from, one per change,
/// times in the gate's zone.
pub fn render_table(v: &PreviewOut, zone: Tz) -> String {
    let mut t = Table::new(&["WHEN", "STATE", "REASON"]);
    t.row(vec![
        "(at --from)".to_string(),
        v.initial.state.clone(),
        v.initial.reason.clone(),
    ]);
    for tr in &v.transitions {
        let at = DateTime::parse_from_rfc3339(&tr.at)
            .map(|a| {
                a.with_timezone(&zone)
                    .format("%a %Y-%m-%d %H:%M %Z")
                    .to_string()
            })
            .unwrap_or_else(|_| tr.at.clone());
        t.row(vec![at, tr.state.clone(), tr.reason.clone()]);
    }
    let mut out = format!("gate {} (times in {})\n{}", v.gate, zone.name(), t.render());
    if !v.rollouts.is_empty() {
        out.push_str(&render_estimates(&v.rollouts, zone));
    }
    out
}

/// The rollout's waves per opening, stated as the estimates they are.
fn render_estimates(rollouts: &[RolloutEstimate], zone: Tz) -> String {
    let at = |t: DateTime<Utc>| {
        t.with_timezone(&zone)
            .format("%a %Y-%m-%d %H:%M")
            .to_string()
    };
    let mut t = Table::new(&["OPENING", "WAVE", "ESTIMATED RELEASE", "NOTE"]);
    for r in rollouts {
        for (i, w) in r.waves.iter().enumerate() {
            let note = match (w.after_close, w.approval) {
                (true, _) => "after the gate closes: waits for a later opening",
                (false, true) => "at the earliest: needs an operator's release-next",
                (false, false) => "",
            };
            t.row(vec![
                if i == 0 {
                    at(r.opening_at)
                } else {
                    String::new()
                },
                format!("{} {}", w.wave, w.name),
                at(w.estimated_release_at),
                note.to_string(),
            ]);
        }
    }
    format!(
        "\nrollout waves, estimated: the opening, then one soak per wave \
         (health checks and approvals only delay them)\n{}",
        t.render()
    )
}
