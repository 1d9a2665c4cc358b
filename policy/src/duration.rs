//! Go-style durations (`90s`, `45m`, `1h30m`, `81h`, `1.5h`, `1d` is not Go and is rejected)
//! parsed to elapsed time, and formatted back the short way.

use chrono::Duration;

use crate::PolicyError;

/// Parses a Go-style duration: one or more `<number><unit>` with units `ms`, `s`, `m`, `h`;
/// numbers may have a fraction. The result must be positive and at most 100 years.
/// Errors carry an empty path; callers put the field path in front.
pub fn parse_duration(s: &str) -> Result<Duration, PolicyError> {
    let err = |why: &str| PolicyError::new("", format!("invalid duration '{s}': {why}"));
    let text = s.trim();
    if text.is_empty() {
        return Err(err("empty"));
    }
    let mut total_ms: f64 = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| err("missing unit (use ms, s, m or h)"))?;
        let (num, tail) = rest.split_at(num_len);
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return Err(err("expected a number before the unit"));
        }
        let value: f64 = num.parse().map_err(|_| err("bad number"))?;
        let unit_len = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, next) = tail.split_at(unit_len);
        let unit_ms = match unit {
            "ms" => 1.0,
            "s" => 1_000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return Err(err(&format!("unknown unit '{unit}' (use ms, s, m or h)"))),
        };
        total_ms += value * unit_ms;
        rest = next;
    }
    const MAX_MS: f64 = 100.0 * 366.0 * 86_400_000.0;
    if total_ms > MAX_MS {
        return Err(err("longer than 100 years"));
    }
    // Rounded to whole milliseconds, the precision Go users expect from such strings.
    let ms = total_ms.round() as i64;
    if ms <= 0 {
        return Err(err("must be greater than zero"));
    }
    Ok(Duration::milliseconds(ms))
}

/// Formats elapsed time the Go way without zero parts: `81h`, `1h30m`, `90s` → `1m30s`.
pub fn format_duration(d: Duration) -> String {
    let total = d.num_milliseconds();
    if total <= 0 {
        return "0s".to_string();
    }
    let (h, m, s, ms) = (
        total / 3_600_000,
        total / 60_000 % 60,
        total / 1000 % 60,
        total % 1000,
    );
    let mut out = String::new();
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if m > 0 {
        out.push_str(&format!("{m}m"));
    }
    if s > 0 || ms > 0 {
        if ms > 0 {
            out.push_str(&format!("{}s", s as f64 + ms as f64 / 1000.0));
        } else {
            out.push_str(&format!("{s}s"));
        }
    }
    out
}
