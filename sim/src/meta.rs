//! ObjectMeta validation the API server applies to every object
//! (k8s.io/apimachinery/pkg/api/validation/objectmeta.go, pkg/util/validation):
//! names, label keys and values, annotation keys.

use serde_json::Value;

use crate::crd::ResourceType;
use crate::error::{Error, FieldError, Result};

pub(crate) fn dns1123_subdomain(name: &str) -> bool {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    name.len() <= 253 && name.split('.').all(label_ok)
}

pub fn validate_name(rt: &ResourceType, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid(
            &rt.group,
            &rt.kind,
            "",
            vec![FieldError {
                detail: "name or generateName is required".into(),
                ..FieldError::required("metadata.name")
            }],
        ));
    }
    if !dns1123_subdomain(name) {
        // validation.IsDNS1123Subdomain's message.
        let detail = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric \
            characters, '-' or '.', and must start and end with an alphanumeric character \
            (e.g. 'example.com', regex used for validation is \
            '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        return Err(Error::invalid(
            &rt.group,
            &rt.kind,
            name,
            vec![FieldError::invalid(
                "metadata.name",
                format!("{name:?}"),
                detail.into(),
            )],
        ));
    }
    Ok(())
}

const QUALIFIED_NAME_DETAIL: &str = "name part must consist of alphanumeric characters, '-', '_' \
    or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
    'my.name',  or '123-abc', regex used for validation is \
    '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

const LABEL_VALUE_DETAIL: &str = "a valid label must be an empty string or consist of \
    alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric \
    character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is \
    '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn name_part(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsQualifiedName`: `[prefix/]name` with a DNS-subdomain prefix.
pub(crate) fn qualified_name(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => !prefix.is_empty() && dns1123_subdomain(prefix) && name_part(name),
        None => name_part(key),
    }
}

/// Label keys and values, annotation keys.
pub fn validate_metadata(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let meta = &obj["metadata"];
    for (k, v) in meta["labels"].as_object().into_iter().flatten() {
        if !qualified_name(k) {
            errors.push(FieldError::invalid(
                "metadata.labels",
                format!("{k:?}"),
                QUALIFIED_NAME_DETAIL.into(),
            ));
        }
        let value = v.as_str().unwrap_or_default();
        if !value.is_empty() && !name_part(value) {
            errors.push(FieldError::invalid(
                "metadata.labels",
                format!("{value:?}"),
                LABEL_VALUE_DETAIL.into(),
            ));
        }
    }
    for k in meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, _)| k)
    {
        if !qualified_name(k) {
            errors.push(FieldError::invalid(
                "metadata.annotations",
                format!("{k:?}"),
                QUALIFIED_NAME_DETAIL.into(),
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn labels_and_annotations() {
        let ok = json!({"metadata": {"labels": {"app.kubernetes.io/name": "web", "empty": ""},
            "annotations": {"fleetgate.io/suspended-by": "a, b", "reconcile.fluxcd.io/requestedAt": "now"}}});
        assert!(validate_metadata(&ok).is_empty());
        let bad = json!({"metadata": {"labels": {"bad key": "x", "k": "not ok!"}, "annotations": {"/x": "1"}}});
        let errs = validate_metadata(&bad);
        assert_eq!(errs.len(), 3);
        assert!(
            errs[1]
                .render()
                .starts_with("metadata.labels: Invalid value: \"not ok!\": a valid label must be")
        );
    }
}
