//! Input checks the gate model does not cover: names of clusters and tokens,
//! Kubernetes-style labels, reasons, SPIFFE IDs, and text PostgreSQL can store. Each
//! error names its field.
//!
//! Storable text ([`text`], [`storable`]) is checked at the boundaries, so no
//! handler can forget it: REST bodies in `rest::extract::Body`, REST paths
//! and queries in `rest::storable_uri`, gRPC AdminService messages in the
//! proto crate's codec, gate manifests in `Gate::validate`. A new input
//! surface whose values reach the database by another road (a manifest kind
//! of its own, a webhook's settings) calls [`storable`] on what it accepts.

use std::collections::BTreeMap;

use crate::{Error, Result};

/// A DNS-1123 label: 1–63 lowercase letters, digits and '-', starting and
/// ending with a letter or digit (cluster names end up in labels and URLs).
pub fn dns_label(field: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            format!(
                "'{}' is not a valid name: 1-63 lowercase letters, digits or '-', \
                 starting and ending with a letter or digit",
                truncate(name)
            ),
        ))
    }
}

/// Kubernetes label syntax: key `[prefix/]name` (name ≤ 63 of alnum, '-',
/// '_', '.', alnum at both ends; prefix a DNS subdomain ≤ 253), value ≤ 63
/// of the same characters or empty.
pub fn labels(field: &str, labels: &BTreeMap<String, String>) -> Result<()> {
    for (k, v) in labels {
        let (prefix, name) = match k.rsplit_once('/') {
            Some((p, n)) => (Some(p), n),
            None => (None, k.as_str()),
        };
        let prefix_ok = prefix.is_none_or(|p| {
            !p.is_empty() && p.len() <= 253 && p.split('.').all(|part| dns_label("", part).is_ok())
        });
        if !prefix_ok || name.is_empty() || !label_value_ok(name) {
            return Err(Error::invalid(
                format!("{field}.{}", truncate(k)),
                "invalid label key",
            ));
        }
        if !label_value_ok(v) {
            return Err(Error::invalid(
                format!("{field}.{}", truncate(k)),
                format!("invalid label value '{}'", truncate(v)),
            ));
        }
    }
    Ok(())
}

fn label_value_ok(v: &str) -> bool {
    if v.is_empty() {
        return true;
    }
    let b = v.as_bytes();
    v.len() <= 63
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

/// A reason: required, at most 1000 characters.
pub fn reason(field: &str, reason: &str) -> Result<()> {
    if reason.trim().is_empty() {
        return Err(Error::invalid(field, "a reason is required"));
    }
    if reason.chars().count() > 1000 {
        return Err(Error::invalid(field, "longer than 1000 characters"));
    }
    Ok(())
}

/// A change ticket reference: 1-128 printable characters.
pub fn ticket(field: &str, t: &str) -> Result<()> {
    if t.trim().is_empty() {
        return Err(Error::invalid(
            field,
            "must not be empty (leave it out instead)",
        ));
    }
    if t.chars().count() > 128 {
        return Err(Error::invalid(field, "longer than 128 characters"));
    }
    if t.chars().any(char::is_control) {
        return Err(Error::invalid(field, "contains control characters"));
    }
    Ok(())
}

/// An optional reason: at most 1000 characters.
pub fn optional_reason(field: &str, reason: Option<&str>) -> Result<()> {
    match reason {
        Some(r) if r.chars().count() > 1000 => {
            Err(Error::invalid(field, "longer than 1000 characters"))
        }
        _ => Ok(()),
    }
}

/// Refuses `s` when PostgreSQL cannot store it (U+0000): 422 naming `field`.
pub fn text(field: &str, s: &str) -> Result<()> {
    fleetgate_policy::text::check_str(field, s).map_err(Error::from_policy)
}

/// Refuses `value` when any string in it cannot be stored: 422 naming the
/// field as `field` followed by its path inside `value` (`field` empty: the
/// path alone, as for a request body).
pub fn storable<T: serde::Serialize + ?Sized>(field: &str, value: &T) -> Result<()> {
    fleetgate_policy::text::check_serialize(value).map_err(|e| within(field, e))
}

/// [`storable`] over a decoded JSON value.
pub fn storable_json(field: &str, value: &serde_json::Value) -> Result<()> {
    fleetgate_policy::text::check_json(value).map_err(|e| within(field, e))
}

fn within(field: &str, e: fleetgate_policy::PolicyError) -> Error {
    let e = e.within(field);
    let field = if e.path.is_empty() { "body" } else { &e.path };
    Error::invalid(field, e.message.clone())
}

/// Longest SPIFFE ID (SPIFFE ID specification, 2.4: at most 2048 bytes).
pub const SPIFFE_ID_MAX_BYTES: usize = 2048;

/// A workload's SPIFFE ID as the SPIFFE ID specification (`standards/SPIFFE-ID.md`) and
/// go-spiffe's `spiffeid.FromString` read it: the scheme `spiffe://` (lowercase), a trust
/// domain of lowercase letters, digits, `.`, `-` and `_` (so no port, no user info), and a
/// path of segments of letters, digits, `.`, `-` and `_` (so no query, fragment or
/// percent-encoding), none empty, `.` or `..`, at most 2048 bytes in all. A trust domain's
/// own ID (no path) names no workload and is refused. Exact matching of a JWT-SVID's `sub`
/// relies on this: an ID spelt otherwise would never match what SPIRE issues.
pub fn spiffe_id(field: &str, id: &str) -> Result<()> {
    let bad = |why: String| {
        Err(Error::invalid(
            field,
            format!("not a SPIFFE ID ({why}): spiffe://TRUST-DOMAIN/PATH"),
        ))
    };
    if id.len() > SPIFFE_ID_MAX_BYTES {
        return bad(format!("longer than {SPIFFE_ID_MAX_BYTES} bytes"));
    }
    let Some(rest) = id.strip_prefix("spiffe://") else {
        return bad("the scheme must be spiffe://, in lowercase".into());
    };
    let (trust_domain, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if trust_domain.is_empty() {
        return bad("no trust domain".into());
    }
    let td_char = |c: char| matches!(c, 'a'..='z' | '0'..='9' | '.' | '-' | '_');
    if let Some(c) = trust_domain.chars().find(|c| !td_char(*c)) {
        let what = match c {
            ':' => "a port".to_string(),
            '@' => "user info".to_string(),
            '?' => "a query".to_string(),
            '#' => "a fragment".to_string(),
            c if c.is_ascii_uppercase() => format!("an uppercase letter {c:?}"),
            c => format!("{c:?}"),
        };
        return bad(format!(
            "the trust domain has {what}; it may hold lowercase letters, digits, '.', '-' and '_' only"
        ));
    }
    if path.is_empty() {
        return bad("no path: that names the trust domain, not a workload".into());
    }
    let path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_');
    for segment in path[1..].split('/') {
        match segment {
            "" => return bad("an empty path segment (a '//' or a trailing '/')".into()),
            "." | ".." => return bad(format!("a '{segment}' path segment")),
            _ => {}
        }
        if let Some(c) = segment.chars().find(|c| !path_char(*c)) {
            let what = match c {
                '?' => "a query".to_string(),
                '#' => "a fragment".to_string(),
                '%' => "percent-encoding".to_string(),
                c => format!("{c:?}"),
            };
            return bad(format!(
                "the path has {what}; its segments may hold letters, digits, '.', '-' and '_' only"
            ));
        }
    }
    Ok(())
}

fn truncate(s: &str) -> String {
    s.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for ok in ["a", "prod-eu-1", "x0", &"a".repeat(63)] {
            assert!(dns_label("name", ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", "a.b", &"a".repeat(64)] {
            assert_eq!(dns_label("name", bad).unwrap_err().field(), Some("name"));
        }
    }

    #[test]
    fn spiffe_ids_as_the_specification_reads_them() {
        let long = format!("spiffe://example.org/{}", "a".repeat(SPIFFE_ID_MAX_BYTES));
        for ok in [
            "spiffe://example.org/ns/fleetgate-system/sa/fleetgate-spoke",
            "spiffe://prod_eu-1.example.org/spoke",
            "spiffe://td/A.b-C_9/x..y/.hidden",
            &long[..SPIFFE_ID_MAX_BYTES],
        ] {
            assert!(spiffe_id("spiffeId", ok).is_ok(), "{ok}");
        }
        for (bad, why) in [
            ("", "scheme"),
            ("SPIFFE://example.org/a", "scheme"),
            ("https://example.org/a", "scheme"),
            ("spiffe:/example.org/a", "scheme"),
            ("spiffe:///a", "no trust domain"),
            ("spiffe://Example.org/a", "uppercase"),
            ("spiffe://example.org:8443/a", "a port"),
            ("spiffe://user@example.org/a", "user info"),
            ("spiffe://exa mple.org/a", "' '"),
            ("spiffe://example.org", "no path"),
            ("spiffe://example.org/", "empty path segment"),
            ("spiffe://example.org/a//b", "empty path segment"),
            ("spiffe://example.org/a/", "empty path segment"),
            ("spiffe://example.org/a/./b", "'.' path segment"),
            ("spiffe://example.org/a/..", "'..' path segment"),
            ("spiffe://example.org/a?x=1", "a query"),
            ("spiffe://example.org/a#f", "a fragment"),
            ("spiffe://example.org?x", "a query"),
            ("spiffe://example.org/a%2Fb", "percent-encoding"),
            ("spiffe://example.org/ä", "'ä'"),
            (&long, "longer than 2048 bytes"),
        ] {
            let e = spiffe_id("spiffeId", bad).unwrap_err();
            assert_eq!(e.field(), Some("spiffeId"), "{bad}");
            assert!(e.to_string().contains(why), "{bad}: {e}");
        }
    }

    #[test]
    fn label_rules() {
        let ok: BTreeMap<_, _> = [("env", "prod"), ("fleetgate.io/tier", "a_b.c"), ("x", "")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(labels("labels", &ok).is_ok());
        let bad: BTreeMap<_, _> = [("env", "-prod")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(
            labels("labels", &bad).unwrap_err().field(),
            Some("labels.env")
        );
        let bad_key: BTreeMap<_, _> = [("/x", "a")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert!(labels("labels", &bad_key).is_err());
    }
}
