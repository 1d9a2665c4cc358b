//! How an override by a principal scoped to some clusters is narrowed to
//! them: naming a cluster outside the scope is refused (403); a gate-wide or
//! selector override covers only the in-scope clusters, as a selector when
//! one selector describes the scope (so clusters the team registers later are
//! covered too), else as the in-scope clusters' names today. The answer says
//! which.

use std::collections::BTreeMap;

use fleetgate_policy::{
    ClusterScope, Gate, LabelSelector, LabelSelectorRequirement, SelectorOperator,
};

use crate::db::clusters::Scoped;
use crate::service::{Clusters, WriteTx};
use crate::{Error, Result};

/// The override scope to store for `requested` (validated against the gate
/// already) under `permitted`, and a note for the answer when it was narrowed.
pub(crate) fn narrow(
    requested: Option<ClusterScope>,
    permitted: &Clusters<'_>,
    gate: &Gate,
    all: &[Scoped],
) -> Result<(Option<ClusterScope>, Option<String>)> {
    let Clusters::Within(within) = permitted else {
        return Ok((requested, None));
    };
    let inside = |c: &Scoped| within.iter().any(|w| w.matches(&c.name, &c.labels));
    if let Some(r) = &requested {
        for n in &r.names {
            if !all.iter().any(|c| c.name == *n && inside(c)) {
                return Err(Error::Forbidden(format!(
                    "cluster '{n}' is outside your cluster scope"
                )));
            }
        }
        if r.selector.is_none() {
            return Ok((requested, None));
        }
    }
    if let [only] = within.as_slice()
        && only.names.is_empty()
        && let Some(team) = &only.selector
    {
        let (names, selector) = match requested {
            None => (Vec::new(), team.clone()),
            Some(r) => (r.names, and(r.selector.unwrap_or_default(), team)),
        };
        let note = format!(
            "narrowed to your cluster scope: the gate's clusters matching {}{}",
            describe(team),
            if names.is_empty() {
                String::new()
            } else {
                format!(" (and {})", names.join(", "))
            }
        );
        return Ok((
            Some(ClusterScope {
                names,
                selector: Some(selector),
            }),
            Some(note),
        ));
    }
    let names: Vec<String> = all
        .iter()
        .filter(|c| {
            gate.spec.clusters.matches(&c.name, &c.labels)
                && requested
                    .as_ref()
                    .is_none_or(|r| r.matches(&c.name, &c.labels))
                && inside(c)
        })
        .map(|c| c.name.clone())
        .collect();
    if names.is_empty() {
        return Err(Error::Forbidden(format!(
            "none of the clusters of gate '{}' this override would cover is in your cluster scope",
            gate.name()
        )));
    }
    let note = format!(
        "narrowed to the {} cluster(s) of your cluster scope it covers now: {}",
        names.len(),
        names.join(", ")
    );
    Ok((
        Some(ClusterScope {
            names,
            selector: None,
        }),
        Some(note),
    ))
}

/// A selector matching what both `a` and `b` match.
fn and(mut a: LabelSelector, b: &LabelSelector) -> LabelSelector {
    for (k, v) in &b.match_labels {
        match a.match_labels.get(k) {
            Some(mine) if mine != v => a.match_expressions.push(LabelSelectorRequirement {
                key: k.clone(),
                operator: SelectorOperator::In,
                values: vec![v.clone()],
            }),
            _ => {
                a.match_labels.insert(k.clone(), v.clone());
            }
        }
    }
    a.match_expressions
        .extend(b.match_expressions.iter().cloned());
    a
}

/// `team=payments,tier in (a,b)` for messages.
fn describe(s: &LabelSelector) -> String {
    let labels: BTreeMap<_, _> = s.match_labels.iter().collect();
    let mut parts: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for e in &s.match_expressions {
        parts.push(match e.operator {
            SelectorOperator::In => format!("{} in ({})", e.key, e.values.join(",")),
            SelectorOperator::NotIn => format!("{} notin ({})", e.key, e.values.join(",")),
            SelectorOperator::Exists => e.key.clone(),
            SelectorOperator::DoesNotExist => format!("!{}", e.key),
        });
    }
    if parts.is_empty() {
        "{} (every cluster)".into()
    } else {
        parts.join(",")
    }
}

/// 403 naming the first of `affected` (the clusters an override applies to
/// now) outside `permitted`: a scoped operator cancels only overrides that
/// stay inside its scope.
pub(crate) fn check_cancel(permitted: &Clusters<'_>, affected: &[&Scoped]) -> Result<()> {
    match affected.iter().find(|c| {
        !permitted.contains(crate::service::ClusterRef {
            name: &c.name,
            labels: &c.labels,
        })
    }) {
        Some(c) => Err(Error::Forbidden(format!(
            "this override also covers cluster '{}', outside your cluster scope",
            c.name
        ))),
        None => Ok(()),
    }
}

/// The clusters of `gate_def` an override of `scope` covers now, for checks made
/// before it exists (approvals).
pub(crate) async fn covered_clusters(
    tx: &mut WriteTx<'_>,
    gate_def: &fleetgate_policy::Gate,
    scope: Option<&fleetgate_policy::ClusterScope>,
) -> Result<Vec<Scoped>> {
    let all = tx.scoped_clusters().await?;
    Ok(covered_in(&all, gate_def, scope))
}

/// The clusters of `all` that `gate_def`, narrowed to `scope`, covers.
pub fn covered_in(
    all: &[Scoped],
    gate_def: &fleetgate_policy::Gate,
    scope: Option<&fleetgate_policy::ClusterScope>,
) -> Vec<Scoped> {
    all.iter()
        .filter(|c| gate_def.spec.clusters.matches(&c.name, &c.labels))
        .filter(|c| scope.as_ref().is_none_or(|s| s.matches(&c.name, &c.labels)))
        .cloned()
        .collect()
}
