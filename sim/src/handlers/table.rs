//! `meta.k8s.io/v1` Table responses (what `kubectl get` asks for): a Name column, the
//! CRD's `additionalPrinterColumns` (simple JSONPath incl. `[?(@.type=="Ready")]`
//! filters), or Age for kinds without printer columns; dates as human durations.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::crd::{PrinterColumn, ResourceType};

/// A computed column of a built-in kind (what the apiserver's internal printers show).
struct Computed {
    name: &'static str,
    type_: &'static str,
    cell: fn(&Value) -> Value,
}

fn age_of(obj: &Value, paths: &[&str]) -> Value {
    paths
        .iter()
        .find_map(|p| jsonpath(obj, p).into_iter().next().and_then(Value::as_str))
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(json!("<unknown>"), |t| {
            json!(human_duration(chrono::Utc::now().signed_duration_since(t)))
        })
}

fn count_keys(obj: &Value) -> Value {
    let n = |f: &str| obj[f].as_object().map_or(0, |m| m.len());
    json!(n("data") + n("binaryData"))
}

/// Columns of built-in kinds (k8s.io/kubernetes/pkg/printers/internalversion/printers.go);
/// `None` for kinds that get Name and Age.
fn builtin_columns(rt: &ResourceType) -> Option<Vec<Computed>> {
    let name = Computed {
        name: "Name",
        type_: "string",
        cell: |o| o["metadata"]["name"].clone(),
    };
    let age = Computed {
        name: "Age",
        type_: "string",
        cell: |o| age_of(o, &[".metadata.creationTimestamp"]),
    };
    if crate::apiextensions::is_crd(rt) {
        // apiextensions-apiserver serves CRDs with rest.NewDefaultTableConvertor: Name and
        // "Created At" as RFC 3339 (what `kubectl get crd` prints).
        return Some(vec![
            name,
            Computed {
                name: "Created At",
                type_: "date",
                cell: |o| o["metadata"]["creationTimestamp"].clone(),
            },
        ]);
    }
    if !rt.group.is_empty() {
        return None;
    }
    Some(match rt.kind.as_str() {
        "Namespace" => vec![
            name,
            Computed {
                name: "Status",
                type_: "string",
                cell: |o| o["status"]["phase"].clone(),
            },
            age,
        ],
        "ConfigMap" => vec![
            name,
            Computed {
                name: "Data",
                type_: "integer",
                cell: count_keys,
            },
            age,
        ],
        "Secret" => vec![
            name,
            Computed {
                name: "Type",
                type_: "string",
                cell: |o| o["type"].clone(),
            },
            Computed {
                name: "Data",
                type_: "integer",
                cell: count_keys,
            },
            age,
        ],
        // Events have no Name column.
        "Event" => vec![
            Computed {
                name: "Last Seen",
                type_: "string",
                cell: |o| {
                    age_of(
                        o,
                        &[
                            ".series.lastObservedTime",
                            ".lastTimestamp",
                            ".eventTime",
                            ".metadata.creationTimestamp",
                        ],
                    )
                },
            },
            Computed {
                name: "Type",
                type_: "string",
                cell: |o| o["type"].clone(),
            },
            Computed {
                name: "Reason",
                type_: "string",
                cell: |o| o["reason"].clone(),
            },
            Computed {
                name: "Object",
                type_: "string",
                cell: |o| {
                    let r = &o["involvedObject"];
                    let kind = r["kind"].as_str().unwrap_or_default().to_lowercase();
                    json!(format!("{kind}/{}", r["name"].as_str().unwrap_or_default()))
                },
            },
            Computed {
                name: "Message",
                type_: "string",
                cell: |o| o["message"].clone(),
            },
        ],
        _ => return None,
    })
}

pub fn render(
    rt: &ResourceType,
    objects: &[Arc<Value>],
    rv: u64,
    continue_token: Option<&str>,
    include_object: bool,
) -> Value {
    if let Some(columns) = builtin_columns(rt) {
        let defs: Vec<Value> = columns
            .iter()
            .map(|c| json!({"name": c.name, "type": c.type_, "format": if c.name == "Name" { "name" } else { "" }, "description": "", "priority": 0}))
            .collect();
        let rows = objects
            .iter()
            .map(|o| (columns.iter().map(|c| (c.cell)(o)).collect(), o))
            .collect();
        return table(defs, rows, rv, continue_token, include_object);
    }
    let age = PrinterColumn {
        name: "Age".into(),
        type_: "date".into(),
        json_path: ".metadata.creationTimestamp".into(),
        description: String::new(),
        priority: 0,
    };
    let columns: Vec<PrinterColumn> = if rt.printer_columns.is_empty() {
        vec![age]
    } else {
        rt.printer_columns.clone()
    };
    let mut defs = vec![json!({
        "name": "Name", "type": "string", "format": "name", "priority": 0,
        "description": "Name must be unique within a namespace.",
    })];
    defs.extend(columns.iter().map(|c| {
        json!({"name": c.name, "type": c.type_, "format": "", "description": c.description, "priority": c.priority})
    }));
    let rows = objects
        .iter()
        .map(|o| {
            let mut cells = vec![o["metadata"]["name"].clone()];
            cells.extend(columns.iter().map(|c| cell(o, c)));
            (cells, o)
        })
        .collect();
    table(defs, rows, rv, continue_token, include_object)
}

fn table(
    defs: Vec<Value>,
    rows: Vec<(Vec<Value>, &Arc<Value>)>,
    rv: u64,
    continue_token: Option<&str>,
    include_object: bool,
) -> Value {
    let rows: Vec<Value> = rows
        .into_iter()
        .map(|(cells, o)| {
            let object = if include_object {
                (**o).clone()
            } else {
                json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": o["metadata"]})
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = continue_token {
        meta["continue"] = json!(c);
    }
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
        "columnDefinitions": defs,
        "rows": rows,
    })
}

fn cell(obj: &Value, col: &PrinterColumn) -> Value {
    let Some(v) = jsonpath(obj, &col.json_path).into_iter().next() else {
        return Value::Null;
    };
    match (col.type_.as_str(), v) {
        ("date", Value::String(s)) => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(t) => json!(human_duration(chrono::Utc::now().signed_duration_since(t))),
            Err(_) => Value::Null,
        },
        (_, v) => v.clone(),
    }
}

/// Evaluates the JSONPath subset CRD printer columns use: `.a.b`, `[N]`, `[*]`,
/// `[?(@.key=="value")]`.
pub fn jsonpath<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let mut current = vec![obj];
    let mut rest = path.trim().trim_start_matches('{').trim_end_matches('}');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            current = current.into_iter().filter_map(|v| v.get(key)).collect();
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else {
                return Vec::new();
            };
            let expr = &r[..end];
            rest = &r[end + 1..];
            current = current
                .into_iter()
                .flat_map(|v| {
                    v.as_array()
                        .map(|a| a.iter().collect::<Vec<_>>())
                        .unwrap_or_default()
                        .into_iter()
                        .enumerate()
                })
                .filter(|(i, x)| index_matches(expr, *i, x))
                .map(|(_, x)| x)
                .collect();
        } else {
            return Vec::new();
        }
    }
    current
}

fn index_matches(expr: &str, i: usize, item: &Value) -> bool {
    if expr == "*" {
        return true;
    }
    if let Ok(n) = expr.parse::<usize>() {
        return n == i;
    }
    let Some(filter) = expr.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) else {
        return false;
    };
    match filter.split_once("==") {
        Some((key, want)) => {
            let want = want.trim().trim_matches('"').trim_matches('\'');
            item.get(key.trim()).and_then(Value::as_str) == Some(want)
        }
        None => item.get(filter.trim()).is_some(),
    }
}

/// k8s.io/apimachinery/pkg/util/duration.HumanDuration.
pub fn human_duration(d: chrono::TimeDelta) -> String {
    let secs = d.num_seconds().max(0);
    let (m, h, days) = (secs / 60, secs / 3600, secs / 86400);
    if secs < 120 {
        format!("{secs}s")
    } else if m < 10 {
        match secs % 60 {
            0 => format!("{m}m"),
            s => format!("{m}m{s}s"),
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            mm => format!("{h}h{mm}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        match h % 24 {
            0 => format!("{days}d"),
            hh => format!("{days}d{hh}h"),
        }
    } else if days < 365 * 2 {
        format!("{days}d")
    } else {
        format!("{}y", days / 365)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonpath_ready_condition() {
        let obj = json!({"status": {"conditions": [
            {"type": "Reconciling", "status": "False"},
            {"type": "Ready", "status": "True", "message": "Applied revision: main@sha1:abc"}]}});
        let got = jsonpath(&obj, r#".status.conditions[?(@.type=="Ready")].message"#);
        assert_eq!(got, vec![&json!("Applied revision: main@sha1:abc")]);
        assert_eq!(
            jsonpath(&obj, ".status.conditions[0].type"),
            vec![&json!("Reconciling")]
        );
        assert!(jsonpath(&obj, ".spec.x").is_empty());
        assert_eq!(human_duration(chrono::TimeDelta::seconds(305)), "5m5s");
    }
}
