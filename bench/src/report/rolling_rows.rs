//! The report's rows of the rolling restart (`crate::rolling`), and the small formatters the
//! storm's rows share with them.

use crate::stats::fmt_ms;

/// The rolling restart's rows; `storm_max_s`: the single hub's storm in the same run (its
/// last re-sync, s), `cores`: the machine's.
pub(super) fn rolling_rows(
    g: &crate::rolling::RollingResult,
    replicas: usize,
    storm_max_s: Option<f64>,
    cores: usize,
    row: &mut impl FnMut(String, String, &str, Option<bool>),
) {
    let h = &g.handover;
    let storm = storm_max_s.map_or(String::new(), |s| {
        format!("; the single hub's storm in this run: {s:.2} s")
    });
    row(
        format!(
            "rolling restart of replica {} of {replicas}, {} spokes ({} on it): SIGTERM → every spoke holds the gate change made through replica 0 right after",
            g.drained, g.spokes, h.moved
        ),
        format!(
            "{:.2} s (the moved spokes {}; the others {}; the change's REST call answered at {:.3} s){storm}",
            h.resync_all.max_ms / 1e3,
            h.resync_moved.cell(),
            h.resync_stayed.cell(),
            g.change_seconds,
        ),
        "",
        None,
    );
    let by_attempts: Vec<String> = h
        .resync_moved_by_attempts
        .iter()
        .map(|(n, p)| {
            format!(
                "{n}: {} spokes, p50 {} / max {} ms",
                p.samples,
                fmt_ms(p.p50_ms),
                fmt_ms(p.max_ms)
            )
        })
        .collect();
    row(
            "rolling restart: the moved spokes' reconnect — first attempt to another replica; attempts → spokes; failed attempts by why@replica; SIGTERM → new snapshot by attempts".into(),
            format!(
                "{} of {}; {}; {}; {}",
                h.moved_first_dial_elsewhere,
                h.moved,
                attempts(&h.attempts_moved),
                failures(&g.failures),
                by_attempts.join(", ")
            ),
            "",
            None,
        );
    let p = &h.phases;
    row(
        "rolling restart: the moved spokes' phases p50 / p99 / max".into(),
        format!(
            "SIGTERM → stream ended {}; ended → dialled {}; dialled → connected (accept) {}; connected → headers (authentication) {}; headers → new snapshot {} ({} answered before the change got it by fan-out)",
            p.ended.cell(),
            p.ended_to_dialled.cell(),
            p.connect.cell(),
            p.authenticate.cell(),
            p.snapshot.cell(),
            h.moved_answered_before_change
        ),
        "",
        None,
    );
    let span = h.resync_all.max_ms / 1e3;
    row(
            "rolling restart: the drained replica SIGTERM → exited; the survivors' CPU and the machine's busy CPU, SIGTERM → last re-sync".into(),
            format!(
                "{:.3} s (in the hub: {}); {:.2} CPU-s; {:.2} / {:.2} CPU-s available",
                g.drained_exit_seconds,
                listed_phases(&g.drain_phases, "no drain log"),
                g.survivor_cpu_seconds,
                g.machine_busy_seconds,
                span * cores as f64
            ),
            "",
            None,
        );
    row(
            "rolling restart: the drained replica started again on its ports → ready; streams per replica before / after the handover / 1 s after the restart".into(),
            format!(
                "{:.3} s (in the hub: {}); {:?} / {:?} / {:?}",
                g.restart_start_seconds,
                listed_phases(&g.startup_phases, "no startup log"),
                g.streams_before,
                g.streams_after,
                g.streams_after_restart
            ),
            "",
            None,
        );
}

/// A hub's start or drain phases, for a row.
pub(super) fn listed_phases(phases: &[(String, f64)], none: &str) -> String {
    if phases.is_empty() {
        return none.to_string();
    }
    phases
        .iter()
        .map(|(p, ms)| format!("{p} {ms:.0} ms"))
        .collect::<Vec<_>>()
        .join(" → ")
}

/// How many spokes needed how many attempts, for a storm's row.
pub(super) fn attempts(by_count: &std::collections::BTreeMap<u32, usize>) -> String {
    by_count
        .iter()
        .map(|(a, n)| format!("{a}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Failed attempts by why, for a storm's row (`none` if none failed).
pub(super) fn failures(by_why: &std::collections::BTreeMap<String, u64>) -> String {
    if by_why.is_empty() {
        return "none".into();
    }
    by_why
        .iter()
        .map(|(why, n)| format!("{why}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}
