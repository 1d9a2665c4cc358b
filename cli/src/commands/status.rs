//! `status`: the fleet at a glance — counts, each gate's open/closed split,
//! and one row per cluster (like `flux get`: may it change now, what holds
//! it, what is waiting, when the next transition is) — or one cluster in
//! detail with its governed objects and the objects held inside its
//! Kustomizations (holdObjects gates).

use chrono::{DateTime, Utc};
use fleetgate_api_types::{Cluster, ClusterStatus, FleetStatus, ReportedObject, Skew};

use crate::args::{Format, StatusArgs};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, args: &StatusArgs, format: Format) -> Result<()> {
    if let Some(name) = &args.cluster {
        let v: ClusterStatus = client
            .get(&format!("/clusters/{}/status", seg(name)), &[])
            .await?;
        return output::print_answer(format, &v, |v| render_cluster(v, args.gate.as_deref()));
    }
    if let Some(sel) = &args.selector {
        // A usage error before any request, like the other `-l` commands.
        fleetgate_policy::LabelSelector::parse(sel)
            .map_err(|e| Error::Usage(format!("--selector: {e}")))?;
    }
    // One request: the fleet summary and every (selected) cluster's gates.
    let mut query: Vec<(&str, String)> = args
        .selector
        .iter()
        .map(|s| ("selector", s.clone()))
        .collect();
    // With --limit, one page of clusters (the hub describes only those).
    query.extend(args.limit.map(|n| ("limit", n.to_string())));
    query.extend(args.cursor.iter().map(|c| ("cursor", c.clone())));
    let v: FleetStatus = client.get("/status/clusters", &query).await?;
    output::print_answer(format, &v, |v| {
        let mut out = render_fleet(v, args.gate.as_deref());
        if let Some(c) = &v.next_cursor {
            // The command that prints the next page.
            let mut next = format!(
                "fleetgate status --limit {}",
                args.limit.unwrap_or_default()
            );
            if let Some(s) = &args.selector {
                next += &format!(" -l '{s}'");
            }
            if let Some(g) = &args.gate {
                next += &format!(" --gate {g}");
            }
            out += &format!("\nmore clusters: {next} --cursor {c}\n");
        }
        out
    })
}

fn spoke(cluster: &Cluster) -> &'static str {
    match (cluster.connected, cluster.spoke_skew) {
        (true, Some(Skew::Unsupported)) => "connected (skew: unsupported)",
        (true, _) => "connected",
        (false, _) => "disconnected",
    }
}

/// An optional instant as the hub writes it, or "—": the state does not
/// change within the look-ahead.
fn next(t: Option<&DateTime<Utc>>) -> String {
    t.map(output::time).unwrap_or_else(|| "—".into())
}

fn render_fleet(v: &FleetStatus, gate: Option<&str>) -> String {
    let s = &v.summary;
    let mut out = super::freeze::banner(&v.freezes, chrono::Utc::now());
    out += &format!(
        "clusters: {} ({} connected, {} disconnected)   may change now: {}   closed: {}   with held changes: {}\n\
         objects: {} governed, {} suspended, {} held   fleet revision {}\n         held objects: {} ({} with changes waiting, {} by a person) on {} clusters\n\n",
        s.clusters.total,
        s.clusters.connected,
        s.clusters.disconnected,
        s.clusters.open,
        s.clusters.closed,
        s.clusters.with_held,
        s.objects.governed,
        s.objects.suspended,
        s.objects.held,
        s.revision,
        s.objects.held_objects,
        s.objects.held_objects_waiting,
        s.objects.held_objects_by_person,
        s.clusters.with_held_objects,
    );
    if s.clusters.rollout_failed > 0 {
        // On the clusters line, after "with held changes: N".
        let at = out.rfind("\nobjects: ").unwrap_or(out.len());
        let failed = format!("   rollout failed: {}", s.clusters.rollout_failed);
        out.insert_str(at, &failed);
    }
    if s.gates.iter().any(|g| g.enforcement == "warn") {
        out.insert_str(
            out.len() - 1,
            &format!(
                "         warn gates would suspend: {} objects ({} with a newer revision), would hold {} objects inside Kustomizations ({} with a newer revision)\n",
                s.objects.would_suspend,
                s.objects.would_hold,
                s.objects.would_hold_objects,
                s.objects.would_hold_objects_waiting
            ),
        );
    }
    let mut gates = Table::new(&[
        "GATE",
        "ENFORCEMENT",
        "CLUSTERS",
        "OPEN",
        "CLOSED",
        "HELD OBJECTS",
        "WOULD SUSPEND",
    ]);
    for g in s.gates.iter().filter(|g| gate.is_none_or(|n| g.gate == n)) {
        gates.row(vec![
            g.gate.clone(),
            g.enforcement.clone(),
            g.clusters.to_string(),
            g.open.to_string(),
            g.closed.to_string(),
            held_cell(g.held_objects, g.would_hold_objects),
            g.would_suspend.to_string(),
        ]);
    }
    if !gates.is_empty() {
        out.push_str(&gates.render());
        out.push('\n');
    }
    let mut t = Table::new(&[
        "CLUSTER",
        "SPOKE",
        "READY",
        "CLOSED BY",
        "WOULD CLOSE",
        "HELD",
        "HELD OBJECTS",
        "WOULD SUSPEND",
        "NEXT",
        "MESSAGE",
    ]);
    for c in &v.clusters {
        if let Some(g) = gate
            && !c.gates.iter().any(|x| x.gate == g)
        {
            continue;
        }
        // A failed rollout wave outranks everything: the cluster may be open (a halted
        // rollout keeps its canary open), but what it runs failed. Otherwise the message is
        // the reason of the first closed gate (or the first gate).
        let failed = c
            .gates
            .iter()
            .filter(|g| gate.is_none_or(|n| g.gate == n))
            .find(|g| g.rollout_failure.is_some());
        let first = c
            .gates
            .iter()
            .find(|g| g.state == "closed")
            .or(c.gates.first());
        let message = match failed.and_then(|g| Some((g, g.rollout_failure.as_ref()?))) {
            Some((g, f)) => format!("{}: {}", g.gate, f.describe()),
            None => first
                .map(|g| format!("{}: {}", g.gate, g.reason))
                .unwrap_or_else(|| "no gates".into()),
        };
        let ready = match (failed.is_some(), c.open) {
            (true, _) => "Failed",
            (false, true) => "True",
            (false, false) => "False",
        };
        t.row(vec![
            c.cluster.name.clone(),
            spoke(&c.cluster).into(),
            ready.into(),
            c.closed_by.join(","),
            c.would_close_by.join(","),
            c.counts.held.to_string(),
            held_cell(c.counts.held_objects, c.counts.would_hold_objects),
            c.counts.would_suspend.to_string(),
            next(c.next_transition.as_ref()),
            message,
        ]);
    }
    out.push_str(&if t.is_empty() {
        "No clusters.\n".into()
    } else {
        t.render()
    });
    out.push_str(&failed_rollouts(v, gate));
    let not_permitted: Vec<String> = v
        .clusters
        .iter()
        .filter(|c| c.counts.held_objects_not_permitted > 0)
        .map(|c| {
            format!(
                "{} ({})",
                c.cluster.name, c.counts.held_objects_not_permitted
            )
        })
        .collect();
    if !not_permitted.is_empty() {
        out.push_str(&format!(
            "\nWARNING HoldNotPermitted: holdObjects gates select objects these spokes may not hold \
             (kind not in --held-kinds), so a closed gate does not hold them: {}\n",
            not_permitted.join(", ")
        ));
    }
    out
}

/// The clusters on which a gate's current rollout failed, each with the failing object and
/// why, and how to go on (a halted rollout waits for an operator).
fn failed_rollouts(v: &FleetStatus, gate: Option<&str>) -> String {
    let mut lines = String::new();
    let mut halted = Vec::new();
    for c in &v.clusters {
        for g in c.gates.iter().filter(|g| gate.is_none_or(|n| g.gate == n)) {
            let Some(f) = &g.rollout_failure else {
                continue;
            };
            lines.push_str(&format!(
                "  {} (gate {}, at {}): {}\n",
                c.cluster.name,
                g.gate,
                output::time(&f.failed_at),
                f.describe()
            ));
            if f.state == fleetgate_api_types::rollout::RolloutState::Halted
                && !halted.contains(&g.gate)
            {
                halted.push(g.gate.clone());
            }
        }
    }
    if lines.is_empty() {
        return String::new();
    }
    let mut out = format!("\nFAILED rollout waves:\n{lines}");
    for g in halted {
        out.push_str(&format!(
            "  rollout of gate {g} halted: fleetgate rollout status {g}; resume after a fix: fleetgate rollout resume {g}\n"
        ));
    }
    out
}

/// The live open/close requests made inside the cluster (annotations on its
/// Gate objects), with the Kubernetes user; cancel one with
/// `fleetgate gate cancel GATE ID`.
fn local_requests(v: &ClusterStatus, gate: Option<&str>) -> String {
    let mut t = Table::new(&["REQUEST", "GATE", "BY", "AT", "UNTIL", "REASON", "ID"]);
    for r in v
        .local_requests
        .iter()
        .filter(|r| gate.is_none_or(|g| r.gate == g))
    {
        t.row(vec![
            if r.state == "open" { "open" } else { "close" }.into(),
            r.gate.clone(),
            r.requested_by.clone().unwrap_or_else(|| "—".into()),
            output::time(&r.created_at),
            output::time_or_empty(r.expires_at.as_ref()),
            r.reason.clone(),
            r.id.to_string(),
        ]);
    }
    if t.is_empty() {
        return String::new();
    }
    format!(
        "\nRequests made in the cluster (cancel: fleetgate gate cancel GATE ID):\n{}",
        t.render()
    )
}

/// The Gate objects made in the cluster (delivered from Git), read-only: the
/// spoke's evaluation and whether it enforces them (hub `--local-gates`).
fn local_gates(v: &ClusterStatus, gate: Option<&str>) -> String {
    let mut t = Table::new(&["LOCAL GATE", "ENFORCED", "STATE", "HELD", "NEXT", "REASON"]);
    for g in v
        .local_gates
        .iter()
        .filter(|g| gate.is_none_or(|n| g.name == n))
    {
        let reason = if g.enforced && g.ready == "True" {
            format!("{}: {}", g.reason, g.message)
        } else {
            format!("{}: {}", g.ready_reason, g.ready_message)
        };
        t.row(vec![
            g.name.clone(),
            if g.enforced { "yes" } else { "no" }.into(),
            if g.enforced { g.state.as_str() } else { "-" }.into(),
            format!("{}/{}", g.held, g.governed),
            output::time_or_empty(g.next_transition.as_ref()),
            reason,
        ]);
    }
    if t.is_empty() {
        return String::new();
    }
    format!(
        "\nLocal gates (Gate objects made in the cluster; read-only, change them in Git):\n{}",
        t.render()
    )
}

fn render_cluster(v: &ClusterStatus, gate: Option<&str>) -> String {
    let c = &v.cluster;
    let mut out = format!(
        "cluster {}   spoke: {} {}   last seen: {}   labels: {}\n\
         may change now: {}   next change: {}\n\n",
        c.name,
        spoke(c),
        super::cluster::spoke_version(c),
        match &c.last_seen_at {
            Some(t) => output::time(t),
            None => "never".to_string(),
        },
        output::labels(&c.labels),
        if v.open {
            "yes".to_string()
        } else {
            format!("no (closed by {})", v.closed_by.join(","))
        },
        next(v.next_transition.as_ref()),
    );
    if !v.would_close_by.is_empty() {
        out.insert_str(
            out.len() - 1,
            &format!(
                "warn gates closed (holding nothing): {}   would suspend: {} objects   would hold: {} objects inside Kustomizations\n",
                v.would_close_by.join(","),
                v.counts.would_suspend,
                v.counts.would_hold_objects
            ),
        );
    }
    let mut t = Table::new(&[
        "GATE",
        "STATE",
        "HELD",
        "HELD OBJECTS",
        "WOULD SUSPEND",
        "NEXT",
        "REASON",
    ]);
    for g in v.gates.iter().filter(|g| gate.is_none_or(|n| g.gate == n)) {
        let state = match (g.enforcement.as_str(), g.state.as_str()) {
            ("warn", "closed") => "would close (warn)".to_string(),
            ("warn", s) => format!("{s} (warn)"),
            (_, s) => s.to_string(),
        };
        t.row(vec![
            g.gate.clone(),
            state,
            g.held.to_string(),
            held_cell(g.held_objects, g.would_hold_objects),
            g.would_suspend.to_string(),
            output::time_or_empty(g.next_transition.as_ref()),
            g.reason.clone(),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "No gates apply to this cluster.\n".into()
    } else {
        t.render()
    });
    out.push_str(&super::rollout::cluster_places(v, gate));
    out.push_str(&local_gates(v, gate));
    out.push_str(&local_requests(v, gate));
    let objects: Vec<_> = v
        .objects
        .iter()
        .map(|o| &o.object)
        .filter(|o| gate.is_none_or(|g| o.gates.iter().any(|x| x == g)))
        .collect();
    if !objects.is_empty() {
        out.push('\n');
        let mut t = Table::new(&[
            "KIND",
            "NAMESPACE",
            "NAME",
            "READY",
            "SUSPENDED",
            "BY",
            "HELD",
            "WOULD SUSPEND",
            "APPLIED",
            "NEWEST",
        ]);
        let mut not_ready = Vec::new();
        for o in objects {
            if let Some(line) = not_ready_line(o) {
                not_ready.push(line);
            }
            let suspended = if o.ignored {
                // fleetgate.io/ignore: "true": the gates target it, fleetgate leaves it be.
                "ignored"
            } else if o.suspended_by_human {
                "by hand"
            } else if o.suspended {
                "yes"
            } else {
                "no"
            };
            t.row(vec![
                o.kind.clone(),
                o.namespace.clone(),
                o.name.clone(),
                ready(o),
                suspended.to_string(),
                o.suspended_by.join(","),
                o.held.to_string(),
                o.would_suspend_by.join(","),
                o.last_applied_revision.clone().unwrap_or_default(),
                o.newest_source_revision.clone().unwrap_or_default(),
            ]);
        }
        out.push_str(&t.render());
        if !not_ready.is_empty() {
            out.push_str("\nnot ready:\n");
            for line in not_ready {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out.push_str(&held_objects(v, gate));
    out.push_str(&report_problems(v));
    let snapshot = super::cluster::snapshot_lines(c);
    if !snapshot.is_empty() {
        out.push('\n');
        out.push_str(&snapshot);
    }
    out
}

/// What the hub stored changed in (U+0000 → U+FFFD) or left out of the
/// cluster's latest report, and a report the database refused; empty if none.
fn report_problems(v: &ClusterStatus) -> String {
    let p = &v.report_problems;
    let mut out = String::new();
    if let Some(e) = &p.write_error {
        let at = p
            .write_error_at
            .as_ref()
            .map(output::time)
            .unwrap_or_default();
        out.push_str(&format!(
            "\nthe hub could not store the latest report ({at}); the status above is older: {e}\n"
        ));
    }
    if p.total > 0 {
        out.push_str(&format!("\nReport problems ({}):\n", p.total));
        let mut t = Table::new(&["OBJECT", "FIELD", "ACTION", "WHY"]);
        for i in &p.items {
            t.row(vec![
                i.object.clone(),
                i.field.clone(),
                i.action.clone(),
                i.message.clone(),
            ]);
        }
        out.push_str(&t.render());
    }
    out
}

/// Flux's Ready condition in one cell: `True`, `False (Reason)`, `Unknown`, `-` while none
/// was reported; `, stalled` when Flux stopped retrying.
fn ready(o: &ReportedObject) -> String {
    let mut cell = match (o.ready.as_deref(), o.ready_reason.as_deref()) {
        (None, _) => "-".to_string(),
        (Some("True"), _) | (Some(_), None | Some("")) => o.ready.clone().unwrap_or_default(),
        (Some(status), Some(reason)) => format!("{status} ({reason})"),
    };
    if o.stalled {
        cell.push_str(", stalled");
    }
    cell
}

/// `  Kustomization apps/web: health check failed …` for an object whose Ready is not True
/// and which has a message (messages are too long for the table).
fn not_ready_line(o: &ReportedObject) -> Option<String> {
    let message = o.ready_message.as_deref().filter(|m| !m.is_empty())?;
    if matches!(o.ready.as_deref(), None | Some("True")) {
        return None;
    }
    Some(format!(
        "  {} {}/{}: {message}",
        o.kind, o.namespace, o.name
    ))
}

/// The objects inside the cluster's Kustomizations that holdObjects gates
/// select (held ones first, as the hub orders them).
fn held_objects(v: &ClusterStatus, gate: Option<&str>) -> String {
    let held: Vec<_> = v
        .held_objects
        .iter()
        .map(|o| &o.object)
        .filter(|o| gate.is_none_or(|g| o.gates.iter().any(|x| x == g)))
        .collect();
    if held.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[
        "HELD OBJECT",
        "NAMESPACE",
        "NAME",
        "KUSTOMIZATION",
        "HELD BY",
        "SINCE",
        "WAITING",
    ]);
    let not_permitted = held.iter().filter(|o| o.not_permitted).count();
    for o in held {
        let kind = match o.group.as_str() {
            "" => o.kind.clone(),
            g => format!("{}.{g}", o.kind),
        };
        let by = if o.not_permitted {
            "NOT PERMITTED".into()
        } else if !o.held_by.is_empty() {
            o.held_by.join(",")
        } else if o.held_by_person {
            "a person".into()
        } else if !o.would_hold_by.is_empty() {
            // A warn gate: nothing is marked, this is what enforcing it would do.
            format!("◌ would: {}", o.would_hold_by.join(","))
        } else {
            "— (not held)".into()
        };
        let (since, waiting) = if o.held_by.is_empty() && !o.would_hold_by.is_empty() {
            (&o.would_hold_since_revision, o.would_hold_newer_revision)
        } else {
            (&o.held_since_revision, o.newer_revision_applied)
        };
        t.row(vec![
            kind,
            o.namespace.clone(),
            o.name.clone(),
            format!("{}/{}", o.kustomization_namespace, o.kustomization_name),
            by,
            since
                .clone()
                .filter(|r| !r.is_empty())
                .unwrap_or_else(|| "—".into()),
            match (waiting, o.held_by.is_empty() && !o.would_hold_by.is_empty()) {
                (true, true) => "would",
                (true, false) => "yes",
                (false, _) => "no",
            }
            .into(),
        ]);
    }
    let mut out = format!("\n{}", t.render());
    if not_permitted > 0 {
        out.push_str(&format!(
            "WARNING HoldNotPermitted: {not_permitted} object(s) selected by holdObjects gates \
             cannot be held on this cluster: their kind is not in the spoke's --held-kinds, so \
             they roll out while the gate is closed (enable the kinds: docs/object-holds.md)\n"
        ));
    }
    out
}

/// A held-objects cell: the objects held, and beside them those closed warn gates would
/// hold if enforced (`2 (◌ 3 would)`).
fn held_cell<T: std::fmt::Display + Default + PartialEq>(held: T, would: T) -> String {
    if would == T::default() {
        held.to_string()
    } else {
        format!("{held} (◌ {would} would)")
    }
}

#[cfg(test)]
mod tests;
