//! `Gate::warnings`: schedules whose days changed when the dialect became Kubernetes CronJob's
//! are named by field; everything read alike by both dialects stays quiet.

use fleetgate_policy::parse_gate;

fn warnings(schedules: &[&str]) -> Vec<String> {
    let mut text = String::from(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: g}\nspec:\n  clusters: {selector: {}}\n  windows:\n",
    );
    for (i, s) in schedules.iter().enumerate() {
        text.push_str(&format!(
            "    - {{name: w{i}, kind: deny, schedule: '{s}', duration: 1h}}\n"
        ));
    }
    text.push_str(
        "    - {name: r, kind: deny, rrule: 'FREQ=DAILY', dtstart: '2026-01-01T00:00:00', duration: 1h}\n",
    );
    let gate = parse_gate(&text).unwrap();
    gate.validate().unwrap();
    gate.warnings().iter().map(ToString::to_string).collect()
}

#[test]
fn changed_day_rule_is_named_with_its_field() {
    assert_eq!(
        warnings(&["0 8 * * MON", "0 0 */2 * MON"]),
        [
            "spec.windows[1].schedule: cron '0 0 */2 * MON' fires on other days than before: fleetgate now reads cron like Kubernetes CronJob (robfig/cron v3); a day field stepped like '*/2' now counts as restricted, so a day matches when day-of-month OR day-of-week matches (before: both had to)"
        ]
    );
}

#[test]
fn day_of_week_steps_that_lost_sunday_are_named() {
    assert_eq!(
        warnings(&["0 12 * * MON/2"]),
        [
            "spec.windows[0].schedule: cron '0 12 * * MON/2' fires on other days than before: fleetgate now reads cron like Kubernetes CronJob (robfig/cron v3); day-of-week 'MON/2' now means Mon,Wed,Fri (before: Sun,Mon,Wed,Fri); steps end on Saturday"
        ]
    );
    assert_eq!(warnings(&["0 0 * * 1/3"]).len(), 1);
    assert_eq!(warnings(&["0 0 1-31 * */2"]).len(), 1);
}

#[test]
fn expressions_read_alike_give_no_warning() {
    let same = [
        "0 8 * * MON",
        "0 0 1 * MON",
        "0 0 */2 * *",
        "0 0 * * */2",
        "0 0 */1 * MON",
        "0 0 1-10 * *",
        "0 0 * * SUN/2",
        "0 0 * * 1-7/2",
        "0 0 * * 5-7",
        "@weekly",
        "@monthly",
        // Not valid before (`?` was rejected), so nothing stored can have changed.
        "0 0 ? * MON",
    ];
    assert!(warnings(&same).is_empty(), "{:?}", warnings(&same));
}
