//! Kubernetes label selectors: the manifest form (`matchLabels`, `matchExpressions`), matching,
//! and the `kubectl -l` string form (`env=prod,tier in (a,b),!canary`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::PolicyError;

/// A label selector. The empty selector (`{}`) matches everything.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Every pair must be present with exactly this value.
    #[serde(
        default,
        deserialize_with = "crate::manifest::null_as_empty",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Every requirement must hold.
    #[serde(
        default,
        deserialize_with = "crate::manifest::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    pub key: String,
    pub operator: SelectorOperator,
    #[serde(
        default,
        deserialize_with = "crate::manifest::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

/// The Kubernetes selector operators. `NotIn` and `DoesNotExist` also match objects without the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SelectorOperator {
    In,
    NotIn,
    Exists,
    DoesNotExist,
}

impl LabelSelectorRequirement {
    /// Whether `labels` satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            SelectorOperator::In => value.is_some_and(|v| self.values.contains(v)),
            SelectorOperator::NotIn => value.is_none_or(|v| !self.values.contains(v)),
            SelectorOperator::Exists => value.is_some(),
            SelectorOperator::DoesNotExist => value.is_none(),
        }
    }

    /// Checks the operator/values combination Kubernetes accepts. Paths are relative.
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        validate_label_key(&self.key).map_err(|e| e.within("key"))?;
        match self.operator {
            SelectorOperator::In | SelectorOperator::NotIn if self.values.is_empty() => Err(
                PolicyError::new("values", "must not be empty for operator In/NotIn"),
            ),
            SelectorOperator::Exists | SelectorOperator::DoesNotExist
                if !self.values.is_empty() =>
            {
                Err(PolicyError::new(
                    "values",
                    "must be empty for operator Exists/DoesNotExist",
                ))
            }
            _ => Ok(()),
        }
    }
}

impl LabelSelector {
    /// Whether `labels` satisfy every `matchLabels` pair and every expression.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| r.matches(labels))
    }

    /// Whether this selector is `{}` (matches everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.is_empty() && self.match_expressions.is_empty()
    }

    /// Checks keys and operator/value combinations. Paths are relative to the selector.
    pub fn validate(&self) -> Result<(), PolicyError> {
        use crate::budgets::{SELECTOR_MAX_TERMS, SELECTOR_MAX_VALUES};
        let terms = self.match_labels.len() + self.match_expressions.len();
        if terms > SELECTOR_MAX_TERMS {
            return Err(PolicyError::new(
                "",
                format!(
                    "{terms} terms (matchLabels and matchExpressions), over the budget of {SELECTOR_MAX_TERMS}"
                ),
            ));
        }
        for (i, r) in self.match_expressions.iter().enumerate() {
            if r.values.len() > SELECTOR_MAX_VALUES {
                return Err(PolicyError::new(
                    format!("matchExpressions[{i}].values"),
                    format!(
                        "{} values, over the budget of {SELECTOR_MAX_VALUES}",
                        r.values.len()
                    ),
                ));
            }
        }
        for key in self.match_labels.keys() {
            validate_label_key(key).map_err(|e| e.within(&format!("matchLabels.{key}")))?;
        }
        for (i, r) in self.match_expressions.iter().enumerate() {
            r.validate()
                .map_err(|e| e.within(&format!("matchExpressions[{i}]")))?;
        }
        Ok(())
    }

    /// Parses the `kubectl -l` syntax: comma-separated `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
    /// `k notin (a,b)`, `k` (exists) and `!k` (does not exist). The empty string selects everything.
    pub fn parse(s: &str) -> Result<LabelSelector, PolicyError> {
        let mut selector = LabelSelector::default();
        for term in split_terms(s)? {
            let term = term.trim();
            if term.is_empty() {
                if s.trim().is_empty() {
                    continue;
                }
                return Err(PolicyError::new(
                    "",
                    format!("empty term in selector '{s}'"),
                ));
            }
            parse_term(term, &mut selector)
                .map_err(|m| PolicyError::new("", format!("selector term '{term}': {m}")))?;
        }
        selector.validate()?;
        Ok(selector)
    }
}

/// Splits on commas outside parentheses.
fn split_terms(s: &str) -> Result<Vec<&str>, PolicyError> {
    let mut terms = Vec::new();
    let mut depth = 0usize;
    let mut begin = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1).ok_or_else(|| {
                    PolicyError::new("", format!("unbalanced ')' in selector '{s}'"))
                })?;
            }
            ',' if depth == 0 => {
                terms.push(&s[begin..i]);
                begin = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(PolicyError::new(
            "",
            format!("unbalanced '(' in selector '{s}'"),
        ));
    }
    terms.push(&s[begin..]);
    Ok(terms)
}

fn parse_term(term: &str, selector: &mut LabelSelector) -> Result<(), String> {
    let requirement = |key: &str, operator, values: Vec<String>| LabelSelectorRequirement {
        key: key.trim().to_string(),
        operator,
        values,
    };
    if let Some(key) = term.strip_prefix('!') {
        check_word(key.trim(), "key")?;
        selector
            .match_expressions
            .push(requirement(key, SelectorOperator::DoesNotExist, vec![]));
    } else if let Some((key, value)) = term.split_once("!=") {
        check_word(key.trim(), "key")?;
        selector.match_expressions.push(requirement(
            key,
            SelectorOperator::NotIn,
            vec![value.trim().to_string()],
        ));
    } else if let Some((key, value)) = term.split_once('=') {
        let value = value.strip_prefix('=').unwrap_or(value).trim();
        check_word(key.trim(), "key")?;
        if value.contains(['=', '(', ')', ' ']) {
            return Err(format!("invalid value '{value}'"));
        }
        selector
            .match_labels
            .insert(key.trim().to_string(), value.to_string());
    } else if let Some((key, op, rest)) = split_set_term(term) {
        let values = rest
            .trim()
            .strip_prefix('(')
            .and_then(|r| r.strip_suffix(')'))
            .ok_or_else(|| format!("expected '({op} values)' as '(a,b)'"))?;
        let values: Vec<String> = values
            .split(',')
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
            .collect();
        let operator = if op == "in" {
            SelectorOperator::In
        } else {
            SelectorOperator::NotIn
        };
        check_word(key, "key")?;
        selector
            .match_expressions
            .push(requirement(key, operator, values));
    } else {
        check_word(term, "key")?;
        selector
            .match_expressions
            .push(requirement(term, SelectorOperator::Exists, vec![]));
    }
    Ok(())
}

/// `key in (…)` / `key notin (…)` → (key, op, rest).
fn split_set_term(term: &str) -> Option<(&str, &'static str, &str)> {
    let (key, rest) = term.split_once(char::is_whitespace)?;
    let rest = rest.trim_start();
    for op in ["notin", "in"] {
        if let Some(values) = rest.strip_prefix(op)
            && values.trim_start().starts_with('(')
        {
            return Some((key, op, values));
        }
    }
    None
}

fn check_word(word: &str, what: &str) -> Result<(), String> {
    if word.is_empty() || word.contains(char::is_whitespace) || word.contains(['(', ')', '!']) {
        Err(format!("invalid {what} '{word}'"))
    } else {
        Ok(())
    }
}

/// A Kubernetes label key: optional DNS prefix and `/`, then a name of ≤ 63 characters of
/// alphanumerics, `-`, `_`, `.`, starting and ending alphanumeric.
fn validate_label_key(key: &str) -> Result<(), PolicyError> {
    let name = key.rsplit_once('/').map_or(
        key,
        |(prefix, name)| {
            if prefix.is_empty() { "" } else { name }
        },
    );
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(PolicyError::new("", format!("invalid label key '{key}'")))
    }
}
