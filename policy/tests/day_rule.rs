//! The day rule of Kubernetes CronJob, held against the real robfig/cron v3 (the parser
//! Kubernetes uses) and croniter: `data/day_rule/expected.tsv` lists, for ~280 expressions
//! (every pairing of 13 day-of-month and 21 day-of-week forms: `*`, `?`, `*/1`, `*/2`, `1/2`,
//! `1-31/2`, `MON/2`, `SUN/2`, lists mixing `*/2` and values, forms with 7, macros), the days of
//! Nov-Dec 2026 on which each fires. `generate.sh` there made it by running both libraries; the
//! test needs neither. Our evaluator and the brute-force oracle must both give robfig's days.

mod support;

use chrono::{Duration, NaiveDate, NaiveDateTime};
use fleetgate_policy::CronSchedule;
use support::cron_oracle::OracleCron;
use support::gate;

const EXPECTED: &str = include_str!("data/day_rule/expected.tsv");
const DAYS: i64 = 61;

fn first_day() -> NaiveDateTime {
    NaiveDate::from_ymd_opt(2026, 11, 1)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap()
}

/// `#` for each day of Nov-Dec 2026 with at least one match, else `.`.
fn strip(fires_on: impl Fn(NaiveDateTime) -> bool) -> String {
    (0..DAYS)
        .map(|d| {
            if fires_on(first_day() + Duration::days(d)) {
                '#'
            } else {
                '.'
            }
        })
        .collect()
}

struct Row<'a> {
    expr: &'a str,
    robfig: &'a str,
    croniter: &'a str,
    /// The equivalent robfig was given instead (day-of-week forms with 7, which it rejects).
    robfig_read: &'a str,
}

fn rows() -> Vec<Row<'static>> {
    EXPECTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            assert_eq!(c.len(), 4, "bad row {l:?}");
            Row {
                expr: c[0],
                robfig: c[1],
                croniter: c[2],
                robfig_read: c[3],
            }
        })
        .collect()
}

#[test]
fn the_table_covers_the_forms_the_issue_names() {
    let exprs: Vec<&str> = rows().iter().map(|r| r.expr).collect();
    for e in [
        "0 0 * * MON/2",
        "0 0 * * 1/3",
        "0 0 * * SUN/2",
        "0 0 * * */2",
        "0 0 */2 * MON",
        "0 0 */1 * MON",
        "0 0 ? * MON",
        "0 0 1-31/2 * MON",
        "0 0 1/2 * MON",
        "0 0 */2,15 * MON",
        "0 0 * * */2,MON",
        "0 0 * * 1-7/2",
        "@weekly",
    ] {
        assert!(exprs.contains(&e), "{e} missing from expected.tsv");
    }
    assert!(exprs.len() > 250);
}

#[test]
fn evaluator_fires_on_the_days_robfig_does() {
    let mut wrong = Vec::new();
    for row in rows() {
        assert!(
            !row.robfig.starts_with("ERR"),
            "{}: {}",
            row.expr,
            row.robfig
        );
        let cron = CronSchedule::parse(row.expr).unwrap_or_else(|e| panic!("{}: {e}", row.expr));
        let ours = strip(|day| {
            cron.next_at_or_after(day, day + Duration::minutes(1439))
                .is_some()
        });
        if ours != row.robfig {
            wrong.push(format!(
                "{}\n  ours   {ours}\n  robfig {}",
                row.expr, row.robfig
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn oracle_fires_on_the_days_robfig_does() {
    let mut wrong = Vec::new();
    for row in rows() {
        let cron = OracleCron::parse(row.expr).unwrap_or_else(|| panic!("{}", row.expr));
        let oracle = strip(|day| (0..1440).any(|m| cron.matches(day + Duration::minutes(m))));
        if oracle != row.robfig {
            wrong.push(format!(
                "{}\n  oracle {oracle}\n  robfig {}",
                row.expr, row.robfig
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// robfig rejects 7 in day-of-week; we read `7`, `5-7`, `a-7/n` and `7/n` as croniter does.
/// With an unrestricted day-of-month croniter's answer is the day-of-week field alone, so it
/// must equal ours (with other day-of-month forms croniter's own day rule differs from
/// robfig's: it counts `*/1` as restricted and `1-31` as unrestricted).
#[test]
fn forms_with_seven_read_as_croniter_does() {
    let sevens: Vec<Row> = rows()
        .into_iter()
        .filter(|r| !r.robfig_read.is_empty() && r.expr.starts_with("0 0 * * "))
        .collect();
    assert_eq!(sevens.len(), 6);
    for row in sevens {
        assert_eq!(row.robfig, row.croniter, "{}", row.expr);
    }
}

/// Where robfig and croniter disagree on an expression both accept, robfig (Kubernetes) wins;
/// this pins the count so a regenerated table is looked at.
#[test]
fn croniter_disagrees_only_where_its_own_day_rule_differs() {
    let disagree: Vec<&str> = rows()
        .iter()
        .filter(|r| {
            r.robfig_read.is_empty() && !r.croniter.starts_with("ERR") && r.robfig != r.croniter
        })
        .map(|r| r.expr)
        .collect();
    for e in &disagree {
        let f: Vec<&str> = e.split_whitespace().collect();
        // croniter: `*/1` restricted, full ranges (`1-31`, `0-6`) unrestricted.
        assert!(
            [f[2], f[4]]
                .iter()
                .any(|x| ["*/1", "1-31", "0-6"].contains(x)),
            "unexpected disagreement on {e}"
        );
    }
}

/// The issue's example, end to end: a deny window `0 12 * * MON/2` previewed for
/// 2026-11-29 … 2026-12-07 closes on Mon 30, Wed 2, Fri 4 — never on a Sunday.
#[test]
fn mon_slash_two_never_closes_on_sunday() {
    let g =
        gate("  windows:\n    - {name: w, kind: deny, schedule: '0 12 * * MON/2', duration: 1h}\n");
    let closes: Vec<String> = support::changes(&g, "2026-11-29 00:00", "2026-12-07 23:59", &[])
        .into_iter()
        .filter(|(_, s)| *s == fleetgate_policy::GateState::Closed)
        .map(|(t, _)| t.format("%a %d").to_string())
        .collect();
    assert_eq!(closes, ["Mon 30", "Wed 02", "Fri 04", "Mon 07"]);
}
