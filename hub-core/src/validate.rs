//! Input checks the gate model does not cover: names of clusters and tokens,
//! Kubernetes-style labels, reasons, and text PostgreSQL can store. Each
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
