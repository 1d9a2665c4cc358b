//! Status helpers shared by the simulated Flux controllers: kstatus-style conditions
//! (lastTransitionTime moves only when the condition's status changes), Go duration
//! parsing for `spec.interval`, and revision strings.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

/// Sets (or replaces) a condition, keeping lastTransitionTime if its status is unchanged.
pub fn set_condition(
    status: &mut Value,
    type_: &str,
    value: bool,
    reason: &str,
    message: &str,
    generation: i64,
) {
    let st = if value { "True" } else { "False" };
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(conds) = status["conditions"].as_array_mut() else {
        return;
    };
    let prev_time = conds
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == st)
        .and_then(|c| c["lastTransitionTime"].as_str())
        .map(String::from);
    let cond = json!({
        "type": type_,
        "status": st,
        "reason": reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": prev_time.unwrap_or_else(crate::managed::now),
    });
    match conds.iter_mut().find(|c| c["type"] == type_) {
        Some(c) => *c = cond,
        None => conds.push(cond),
    }
}

/// Parses a Go duration (`1h30m`, `5m`, `10s`, `500ms`, `1.5h`).
pub fn parse_duration(s: &str) -> Option<Duration> {
    let mut total = 0f64;
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let secs = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 0.001,
            "us" | "µs" => 0.000_001,
            "ns" => 0.000_000_001,
            _ => return None,
        };
        total += n * secs;
        rest = &rest[unit_end..];
    }
    Some(Duration::from_secs_f64(total))
}

/// Deterministic hex digest of `seed` (for initial revisions and artifact digests).
pub fn digest_hex(seed: &str, len: usize) -> String {
    let h = hex::encode(Sha256::digest(seed.as_bytes()));
    h[..len.min(h.len())].to_string()
}

/// The revision a source publishes before anyone pushes to it.
pub fn initial_revision(kind: &str, obj: &Value, seed: &str) -> String {
    match kind {
        "GitRepository" => {
            let branch = obj["spec"]["ref"]["branch"].as_str().unwrap_or("main");
            format!("{branch}@sha1:{}", digest_hex(seed, 40))
        }
        "OCIRepository" => {
            let tag = obj["spec"]["ref"]["tag"].as_str().unwrap_or("latest");
            format!("{tag}@sha256:{}", digest_hex(seed, 64))
        }
        "HelmChart" => obj["spec"]["version"]
            .as_str()
            .filter(|v| !v.contains('*') && !v.is_empty())
            .unwrap_or("1.0.0")
            .to_string(),
        _ => format!("sha256:{}", digest_hex(seed, 64)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_conditions() {
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Some(Duration::from_millis(500)));
        assert_eq!(parse_duration("5x"), None);
        let mut st = json!({});
        set_condition(&mut st, "Ready", true, "Succeeded", "ok", 1);
        let t1 = st["conditions"][0]["lastTransitionTime"].clone();
        set_condition(&mut st, "Ready", true, "Succeeded", "ok again", 2);
        assert_eq!(st["conditions"][0]["lastTransitionTime"], t1);
        assert_eq!(st["conditions"].as_array().unwrap().len(), 1);
        let rev = initial_revision("GitRepository", &json!({}), "x");
        assert!(rev.starts_with("main@sha1:") && rev.len() == "main@sha1:".len() + 40);
    }
}
