//! `labelSelector` and `fieldSelector` query parameters, parsed and matched as the API
//! server does (k8s.io/apimachinery/pkg/labels/selector.go, pkg/fields/selector.go).

use serde_json::Value;

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq)]
enum Req {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed label selector; empty matches everything.
#[derive(Debug, Clone, Default)]
pub struct LabelSelector(Vec<Req>);

impl LabelSelector {
    pub fn parse(s: &str) -> Result<LabelSelector> {
        let mut reqs = Vec::new();
        for term in split_top_level(s) {
            let term = term.trim();
            if term.is_empty() {
                continue;
            }
            reqs.push(parse_term(term)?);
        }
        Ok(LabelSelector(reqs))
    }

    pub fn matches(&self, obj: &Value) -> bool {
        let labels = &obj["metadata"]["labels"];
        let get = |k: &str| labels.get(k).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            Req::Eq(k, v) => get(k) == Some(v.as_str()),
            Req::NotEq(k, v) => get(k) != Some(v.as_str()),
            Req::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Req::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            Req::Exists(k) => get(k).is_some(),
            Req::NotExists(k) => get(k).is_none(),
        })
    }
}

/// Splits on commas outside parentheses (`a in (x,y),b`).
fn split_top_level(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn parse_term(term: &str) -> Result<Req> {
    let bad = || Error::bad_request(format!("unable to parse requirement: found '{term}'"));
    if let Some(k) = term.strip_prefix('!') {
        return Ok(Req::NotExists(k.trim().to_string()));
    }
    if let Some((k, v)) = term.split_once("!=") {
        return Ok(Req::NotEq(k.trim().into(), v.trim().into()));
    }
    if let Some((k, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Ok(Req::Eq(k.trim().into(), v.trim().into()));
    }
    for (op, notin) in [(" notin ", true), (" in ", false)] {
        if let Some((k, rest)) = term.split_once(op) {
            let rest = rest.trim();
            let inner = rest
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .ok_or_else(bad)?;
            let vals = inner.split(',').map(|v| v.trim().to_string()).collect();
            let k = k.trim().to_string();
            return Ok(if notin {
                Req::NotIn(k, vals)
            } else {
                Req::In(k, vals)
            });
        }
    }
    if term.contains(char::is_whitespace) {
        return Err(bad());
    }
    Ok(Req::Exists(term.to_string()))
}

/// A parsed field selector over dotted paths (`metadata.name=x,metadata.namespace!=y`).
#[derive(Debug, Clone, Default)]
pub struct FieldSelector(Vec<FieldTerm>);

/// One term: field, `=`/`==` (true) or `!=` (false), value, and the term as written.
#[derive(Debug, Clone)]
struct FieldTerm {
    field: String,
    eq: bool,
    value: String,
    text: String,
}

impl FieldSelector {
    /// Custom resources only support `metadata.name` and `metadata.namespace`
    /// (apiextensions-apiserver: "field label not supported").
    pub fn parse(s: &str, custom: bool) -> Result<FieldSelector> {
        let mut out = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (field, eq, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(Error::bad_request(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            let field = field.trim();
            if custom && field != "metadata.name" && field != "metadata.namespace" {
                return Err(Error::bad_request(format!(
                    "field label not supported: {field}"
                )));
            }
            out.push(FieldTerm {
                field: field.to_string(),
                eq,
                value: value.trim().to_string(),
                text: term.to_string(),
            });
        }
        Ok(FieldSelector(out))
    }

    /// The value `field` must equal for an object to match, if some `=`/`==` term names it
    /// (fields.Selector.RequiresExactMatch; the API server sorts the terms as they were
    /// written, `sort.StringSlice(parts).Sort()` in parseSelector, and the first such term
    /// wins).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.0
            .iter()
            .filter(|t| t.field == field && t.eq)
            .min_by(|a, b| a.text.cmp(&b.text))
            .map(|t| t.value.as_str())
    }

    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(
            |FieldTerm {
                 field,
                 eq,
                 value: want,
                 ..
             }| {
                let mut cur = obj;
                for part in field.split('.') {
                    cur = &cur[part];
                }
                let have = match cur {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => other.to_string(),
                };
                (have == *want) == *eq
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selector_operators() {
        let obj = json!({"metadata": {"labels": {"env": "prod", "tier": "web"}}});
        for (sel, want) in [
            ("env=prod", true),
            ("env==prod,tier=web", true),
            ("env!=prod", false),
            ("env in (dev, prod)", true),
            ("env notin (prod)", false),
            ("tier", true),
            ("!tier", false),
            ("missing notin (x)", true),
            ("", true),
        ] {
            assert_eq!(
                LabelSelector::parse(sel).unwrap().matches(&obj),
                want,
                "{sel}"
            );
        }
        assert!(LabelSelector::parse("env in prod").is_err());
    }

    #[test]
    fn field_selector_on_custom_resources() {
        let obj = json!({"metadata": {"name": "a", "namespace": "n"}});
        let sel = FieldSelector::parse("metadata.name=a,metadata.namespace!=x", true).unwrap();
        assert!(sel.matches(&obj));
        let err = FieldSelector::parse("spec.suspend=true", true).unwrap_err();
        assert_eq!(
            err.status().message,
            "field label not supported: spec.suspend"
        );
        assert!(FieldSelector::parse("spec.x=1", false).is_ok());
    }
}
