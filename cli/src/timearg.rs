//! Time arguments (`--from`, `--to`, `--since`): RFC3339 instants, or local
//! wall-clock times in a given zone, mapped with the same DST rule as gate
//! windows (a time in a DST gap moves later by the gap; an ambiguous one is
//! the earlier instant).

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use chrono_tz::Tz;

use crate::error::{Error, Result};

/// Parses `now`, RFC3339 (`2026-11-27T07:00:00Z`, `...+01:00`), a local
/// datetime (`2026-11-27T08:00`, `2026-11-27T08:00:00`, `2026-11-27 08:00`) or a
/// date (`2026-11-27`, midnight) in `zone`. `flag` names the flag in errors.
pub fn parse(flag: &str, value: &str, zone: Tz, now: DateTime<Utc>) -> Result<DateTime<Utc>> {
    let v = value.trim();
    if v.eq_ignore_ascii_case("now") {
        return Ok(now);
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(v) {
        return Ok(t.with_timezone(&Utc));
    }
    let naive = [
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%d %H:%M",
    ]
    .iter()
    .find_map(|f| NaiveDateTime::parse_from_str(v, f).ok())
    .or_else(|| {
        NaiveDate::parse_from_str(v, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
    });
    match naive {
        Some(n) => Ok(local_to_utc(zone, n)),
        None => Err(Error::Usage(format!(
            "{flag}: cannot parse '{value}': use RFC3339 (2026-11-27T07:00:00Z), a local time \
             in the gate's zone (2026-11-27T08:00), a date (2026-11-27) or 'now'"
        ))),
    }
}

/// Local wall-clock time → instant with the gate DST rule (the policy
/// crate's mapping, so the CLI reads times exactly as windows are read).
pub fn local_to_utc(zone: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    fleetgate_policy::resolve_local(zone, local)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 21, 12, 0, 0).unwrap()
    }

    #[test]
    fn forms() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let want = Utc.with_ymd_and_hms(2026, 11, 27, 7, 0, 0).unwrap();
        for v in [
            "2026-11-27T07:00:00Z",
            "2026-11-27T08:00:00+01:00",
            "2026-11-27T08:00",
            "2026-11-27T08:00:00",
            "2026-11-27 08:00",
        ] {
            assert_eq!(parse("--from", v, berlin, now()).unwrap(), want, "{v}");
        }
        assert_eq!(
            parse("--from", "2026-11-27", berlin, now()).unwrap(),
            Utc.with_ymd_and_hms(2026, 11, 26, 23, 0, 0).unwrap()
        );
        assert_eq!(parse("--from", "now", berlin, now()).unwrap(), now());
        let err = parse("--to", "friday", berlin, now()).unwrap_err();
        assert!(err.to_string().starts_with("--to: cannot parse 'friday'"));
    }

    #[test]
    fn dst_gap_moves_later_and_overlap_takes_earlier() {
        let berlin: Tz = "Europe/Berlin".parse().unwrap();
        let gap = NaiveDate::from_ymd_opt(2026, 3, 29)
            .unwrap()
            .and_hms_opt(2, 30, 0)
            .unwrap();
        // 02:30 does not exist; 03:30 CEST = 01:30 UTC.
        assert_eq!(
            local_to_utc(berlin, gap),
            Utc.with_ymd_and_hms(2026, 3, 29, 1, 30, 0).unwrap()
        );
        let overlap = NaiveDate::from_ymd_opt(2026, 10, 25)
            .unwrap()
            .and_hms_opt(2, 30, 0)
            .unwrap();
        // 02:30 happens twice; the first is CEST (+2) = 00:30 UTC.
        assert_eq!(
            local_to_utc(berlin, overlap),
            Utc.with_ymd_and_hms(2026, 10, 25, 0, 30, 0).unwrap()
        );
    }
}
