//! The CustomResourceDefinition registry strategy: defaulting, server-set status and
//! generation on create/update, the finalizer-and-Terminating delete, and validation of a
//! CRD (apiextensions-apiserver pkg/registry/customresourcedefinition/strategy.go and
//! etcd.go, pkg/apis/apiextensions/v1/defaults.go, pkg/apis/apiextensions/validation/
//! validation.go — the checks people hit, not all of them: CEL rules, conversion
//! webhooks and most format/structural subtleties are not checked).

use serde_json::{Value, json};

use crate::error::{Error, FieldError, Result};
use crate::write_opts::Sub;

use super::crd_object::{CLEANUP_FINALIZER, GROUP, KIND, condition_is, set_condition};

/// Defaults, status and generation for a CRD write, then validation (422 naming the field).
pub fn prepare(old: Option<&Value>, new: &mut Value, sub: Sub) -> Result<()> {
    if sub == Sub::Main {
        set_defaults(&mut new["spec"]);
    }
    match old {
        None => {
            // strategy.go, PrepareForCreate: status is reset, generation 1, and the storage
            // version is recorded as stored.
            new["status"] = json!({"acceptedNames": {"plural": "", "kind": ""}});
            new["metadata"]["generation"] = json!(1);
            record_stored_version(new);
        }
        Some(old) if sub == Sub::Main => {
            // PrepareForUpdate: generation follows spec changes; a new storage version joins
            // status.storedVersions.
            let generation = old["metadata"]["generation"].as_i64().unwrap_or(1);
            let bump = i64::from(old["spec"] != new["spec"]);
            new["metadata"]["generation"] = json!(generation + bump);
            record_stored_version(new);
        }
        Some(_) => {}
    }
    let errors = validate(new, old);
    if errors.is_empty() {
        return Ok(());
    }
    let name = new["metadata"]["name"].as_str().unwrap_or_default();
    Err(Error::invalid(GROUP, KIND, name, errors))
}

/// v1 defaults.go, SetDefaults_CustomResourceDefinitionSpec.
pub fn set_defaults(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    let kind = spec["names"]["kind"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let names = &mut spec["names"];
    if names.is_object() {
        if names["singular"].as_str().unwrap_or_default().is_empty() {
            names["singular"] = json!(kind.to_lowercase());
        }
        if names["listKind"].as_str().unwrap_or_default().is_empty() && !kind.is_empty() {
            names["listKind"] = json!(format!("{kind}List"));
        }
    }
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec["conversion"] = json!({"strategy": "None"});
    }
}

fn storage_version(crd: &Value) -> Option<&str> {
    crd["spec"]["versions"]
        .as_array()?
        .iter()
        .find(|v| v["storage"] == Value::Bool(true))?["name"]
        .as_str()
}

fn record_stored_version(crd: &mut Value) {
    let Some(storage) = storage_version(crd).map(String::from) else {
        return;
    };
    let stored = &mut crd["status"]["storedVersions"];
    if !stored.is_array() {
        *stored = json!([]);
    }
    if let Some(list) = stored.as_array_mut()
        && !list.iter().any(|v| v == storage.as_str())
    {
        list.push(json!(storage));
    }
}

/// etcd.go, Delete: the first delete adds the cleanup finalizer, sets deletionTimestamp
/// and the Terminating condition; the finalizer controller then deletes the objects.
pub fn mark_deleting(crd: &Value, now: &str) -> Value {
    let mut marked = crd.clone();
    let meta = &mut marked["metadata"];
    meta["deletionTimestamp"] = json!(now);
    meta["deletionGracePeriodSeconds"] = json!(0);
    if !meta["finalizers"].is_array() {
        meta["finalizers"] = json!([]);
    }
    if let Some(f) = meta["finalizers"].as_array_mut()
        && !f.iter().any(|f| f == CLEANUP_FINALIZER)
    {
        f.push(json!(CLEANUP_FINALIZER));
    }
    set_condition(
        &mut marked,
        "Terminating",
        "True",
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        now,
    );
    marked
}

fn dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 63
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[b.len() - 1] != b'-'
}

fn dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|l| {
            let b = l.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters \
     or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. \
     'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn quoted(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        Value::Null => "\"\"".into(),
        other => other.to_string(),
    }
}

/// validation.go, ValidateCustomResourceDefinition (+ ...Update with `old`).
pub fn validate(crd: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &crd["spec"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let (group, plural) = (s(&spec["group"]), s(&spec["names"]["plural"]));
    let name = s(&crd["metadata"]["name"]);
    if name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            format!("{name:?}"),
            "must be spec.names.plural+\".\"+spec.group".into(),
        ));
    }
    if group.is_empty() {
        errs.push(FieldError::required("spec.group"));
    } else if !dns1123_subdomain(&group) {
        errs.push(FieldError::invalid(
            "spec.group",
            format!("{group:?}"),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
             '-' or '.', and must start and end with an alphanumeric character"
                .into(),
        ));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            "spec.group",
            format!("{group:?}"),
            "should be a domain with at least one dot".into(),
        ));
    }
    match spec["scope"].as_str() {
        Some("Cluster" | "Namespaced") => {}
        None | Some("") => errs.push(FieldError::required("spec.scope")),
        Some(other) => errs.push(FieldError::not_supported(
            "spec.scope",
            format!("{other:?}"),
            &["\"Cluster\"".into(), "\"Namespaced\"".into()],
        )),
    }
    validate_names(&spec["names"], &mut errs);
    validate_versions(spec, &mut errs);
    validate_stored_versions(crd, &mut errs);
    if let Some(old) = old {
        let established = condition_is(old, "Established", "True");
        for (path, field) in [("spec.scope", "scope"), ("spec.names.kind", "kind")] {
            let (was, now) = match field {
                "scope" => (&old["spec"]["scope"], &spec["scope"]),
                _ => (&old["spec"]["names"]["kind"], &spec["names"]["kind"]),
            };
            // ValidateCustomResourceDefinitionSpecUpdate: fixed once established.
            if established && was != now {
                errs.push(FieldError::invalid(
                    path,
                    quoted(now),
                    "field is immutable".into(),
                ));
            }
        }
    }
    errs
}

fn validate_names(names: &Value, errs: &mut Vec<FieldError>) {
    for field in ["plural", "singular"] {
        let path = format!("spec.names.{field}");
        match names[field].as_str() {
            None | Some("") if field == "plural" => errs.push(FieldError::required(&path)),
            Some(v) if !v.is_empty() && !dns1035_label(v) => errs.push(FieldError::invalid(
                &path,
                format!("{v:?}"),
                DNS1035_MSG.into(),
            )),
            _ => {}
        }
    }
    for (i, short) in names["shortNames"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let v = short.as_str().unwrap_or_default();
        if !dns1035_label(v) {
            errs.push(FieldError::invalid(
                &format!("spec.names.shortNames[{i}]"),
                quoted(short),
                DNS1035_MSG.into(),
            ));
        }
    }
    let kind = names["kind"].as_str().unwrap_or_default();
    if kind.is_empty() {
        errs.push(FieldError::required("spec.names.kind"));
    } else if names["listKind"] == kind {
        errs.push(FieldError::invalid(
            "spec.names.listKind",
            format!("{kind:?}"),
            "kind and listKind may not be the same".into(),
        ));
    }
}

fn validate_versions(spec: &Value, errs: &mut Vec<FieldError>) {
    let versions = spec["versions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let storage = versions
        .iter()
        .filter(|v| v["storage"] == Value::Bool(true))
        .count();
    if storage != 1 {
        errs.push(FieldError::invalid(
            "spec.versions",
            "[]".into(),
            "must have exactly one version marked as storage version".into(),
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = v["name"].as_str().unwrap_or_default();
        if !dns1035_label(name) {
            errs.push(FieldError::invalid(
                &format!("{path}.name"),
                format!("{name:?}"),
                DNS1035_MSG.into(),
            ));
        }
        if seen.contains(&name) {
            errs.push(FieldError::invalid(
                &format!("{path}.name"),
                format!("{name:?}"),
                "must be unique".into(),
            ));
        }
        seen.push(name);
        let schema_path = format!("{path}.schema.openAPIV3Schema");
        match v["schema"].get("openAPIV3Schema") {
            Some(root) if root.is_object() => structural(root, &schema_path, true, errs),
            _ => errs.push(FieldError::required_because(
                &schema_path,
                "schemas are required",
            )),
        }
        validate_columns(v, &path, errs);
    }
    if !versions.is_empty() && versions.iter().all(|v| v["served"] != Value::Bool(true)) {
        errs.push(FieldError::invalid(
            "spec.versions",
            "[]".into(),
            "must have at least one version marked as served".into(),
        ));
    }
}

fn validate_columns(version: &Value, path: &str, errs: &mut Vec<FieldError>) {
    const TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
    let columns = version["additionalPrinterColumns"].as_array();
    for (i, c) in columns.into_iter().flatten().enumerate() {
        let p = format!("{path}.additionalPrinterColumns[{i}]");
        if c["name"].as_str().unwrap_or_default().is_empty() {
            errs.push(FieldError::required(&format!("{p}.name")));
        }
        if c["jsonPath"].as_str().unwrap_or_default().is_empty() {
            errs.push(FieldError::required(&format!("{p}.jsonPath")));
        }
        match c["type"].as_str() {
            Some(t) if TYPES.contains(&t) => {}
            None | Some("") => errs.push(FieldError::required(&format!("{p}.type"))),
            Some(t) => errs.push(FieldError::not_supported(
                &format!("{p}.type"),
                format!("{t:?}"),
                &TYPES.map(|t| format!("{t:?}")),
            )),
        }
    }
}

/// The structural-schema rules people trip over (apiserver/schema/validation.go,
/// validateStructuralInvariants): a type at the root (`object`) and on every specified
/// field, unless it is int-or-string or preserves unknown fields.
fn structural(schema: &Value, path: &str, root: bool, errs: &mut Vec<FieldError>) {
    let ty = schema["type"].as_str().unwrap_or_default();
    let untyped_ok = schema["x-kubernetes-int-or-string"] == Value::Bool(true)
        || schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
    if root && ty.is_empty() {
        errs.push(FieldError::required_because(
            &format!("{path}.type"),
            "must not be empty at the root",
        ));
    } else if root && ty != "object" {
        errs.push(FieldError::invalid(
            &format!("{path}.type"),
            format!("{ty:?}"),
            "must be object at the root".into(),
        ));
    } else if !root && ty.is_empty() && !untyped_ok {
        errs.push(FieldError::required_because(
            &format!("{path}.type"),
            "must not be empty for specified object fields",
        ));
    }
    for (k, child) in schema["properties"].as_object().into_iter().flatten() {
        structural(child, &format!("{path}.properties[{k}]"), false, errs);
    }
    if let Some(items) = schema.get("items").filter(|i| i.is_object()) {
        structural(items, &format!("{path}.items"), false, errs);
    }
    if let Some(extra) = schema.get("additionalProperties").filter(|a| a.is_object()) {
        structural(extra, &format!("{path}.additionalProperties"), false, errs);
    }
}

/// ValidateCustomResourceDefinitionStoredVersions: a stored version cannot leave the spec.
fn validate_stored_versions(crd: &Value, errs: &mut Vec<FieldError>) {
    let versions = crd["spec"]["versions"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let stored = crd["status"]["storedVersions"].as_array();
    for (i, sv) in stored.into_iter().flatten().enumerate() {
        if !versions.iter().any(|v| v["name"] == *sv) {
            errs.push(FieldError::invalid(
                &format!("status.storedVersions[{i}]"),
                quoted(sv),
                "must appear in spec.versions".into(),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "properties": {"spec": {"type": "object",
                            "properties": {"size": {"type": "integer"}}}}}}}]}})
    }

    #[test]
    fn create_defaults_status_and_generation() {
        let mut c = crd();
        prepare(None, &mut c, Sub::Main).unwrap();
        assert_eq!(c["spec"]["names"]["singular"], "widget");
        assert_eq!(c["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(c["spec"]["conversion"]["strategy"], "None");
        assert_eq!(c["status"]["storedVersions"], json!(["v1"]));
        assert_eq!(c["metadata"]["generation"], 1);
        let mut same = c.clone();
        prepare(Some(&c), &mut same, Sub::Main).unwrap();
        assert_eq!(same["metadata"]["generation"], 1, "no spec change");
        same["spec"]["versions"][0]["served"] = json!(false);
        same["spec"]["versions"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "v2",
            "served": true, "storage": false, "schema": {"openAPIV3Schema": {"type": "object"}}}));
        prepare(Some(&c), &mut same, Sub::Main).unwrap();
        assert_eq!(same["metadata"]["generation"], 2);
    }

    #[test]
    fn rejects_what_the_apiserver_rejects_naming_the_field() {
        let mut c = crd();
        c["metadata"]["name"] = json!("gadgets.example.com");
        c["spec"]["scope"] = json!("Global");
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
            ["size"] = json!({"description": "no type"});
        let errs: Vec<String> = validate(&c, None).iter().map(FieldError::render).collect();
        assert_eq!(
            errs,
            [
                "metadata.name: Invalid value: \"gadgets.example.com\": must be spec.names.plural+\".\"+spec.group",
                "spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\"",
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields",
            ]
        );
        let mut c = crd();
        c["spec"]["versions"][0]["storage"] = json!(false);
        c["spec"]["group"] = json!("example");
        c["metadata"]["name"] = json!("widgets.example");
        let errs: Vec<String> = validate(&c, None).iter().map(FieldError::render).collect();
        assert!(
            errs[0].contains("should be a domain with at least one dot"),
            "{errs:?}"
        );
        assert!(
            errs[1].contains("exactly one version marked as storage"),
            "{errs:?}"
        );
    }

    #[test]
    fn established_scope_is_immutable_and_stored_versions_stay() {
        let mut old = crd();
        prepare(None, &mut old, Sub::Main).unwrap();
        set_condition(
            &mut old,
            "Established",
            "True",
            "InitialNamesAccepted",
            "",
            "t",
        );
        let mut new = old.clone();
        new["spec"]["scope"] = json!("Cluster");
        new["spec"]["versions"][0]["name"] = json!("v2");
        let err = prepare(Some(&old), &mut new, Sub::Main).unwrap_err();
        let msg = err.status().message;
        assert!(
            msg.contains("spec.scope: Invalid value: \"Cluster\": field is immutable"),
            "{msg}"
        );
        assert!(
            msg.contains(
                "status.storedVersions[0]: Invalid value: \"v1\": must appear in spec.versions"
            ),
            "{msg}"
        );
    }
}
