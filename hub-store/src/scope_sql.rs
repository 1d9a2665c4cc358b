//! A cluster scope as SQL: the `where` clause that keeps exactly the clusters a union of
//! [`ClusterScope`]s matches ([`ClusterScope::matches`]: a listed name, or a selector
//! matching the labels), so a scoped read asks PostgreSQL for its share of the fleet
//! instead of reading every cluster and dropping most of them.
//!
//! Every value is bound (`push_bind`); only the shape of the clause comes from the scope.
//! `matchLabels` becomes one `labels @> {...}` test, which the GIN index on
//! `clusters.labels` (migration 0064) answers without reading other clusters; names use the
//! primary key.

use fleetgate_policy::{ClusterScope, LabelSelector, SelectorOperator};
use sqlx::{Postgres, QueryBuilder};

/// Appends `(…)`: true for a cluster (`alias.name`, `alias.labels`) matched by one of
/// `scopes` (none: no cluster).
pub fn push_within(q: &mut QueryBuilder<Postgres>, alias: &str, scopes: &[ClusterScope]) {
    if scopes.is_empty() {
        q.push("false");
        return;
    }
    q.push("(");
    for (i, scope) in scopes.iter().enumerate() {
        if i > 0 {
            q.push(" or ");
        }
        push_scope(q, alias, scope);
    }
    q.push(")");
}

fn push_scope(q: &mut QueryBuilder<Postgres>, alias: &str, scope: &ClusterScope) {
    let mut parts = 0;
    q.push("(");
    if !scope.names.is_empty() {
        q.push(format_args!("{alias}.name = any("));
        q.push_bind(scope.names.clone());
        q.push(")");
        parts += 1;
    }
    if let Some(selector) = &scope.selector {
        if parts > 0 {
            q.push(" or ");
        }
        push_selector(q, alias, selector);
        parts += 1;
    }
    if parts == 0 {
        // Neither names nor a selector: matches nothing.
        q.push("false");
    }
    q.push(")");
}

/// `{}` matches every cluster; otherwise every `matchLabels` pair and every expression.
fn push_selector(q: &mut QueryBuilder<Postgres>, alias: &str, selector: &LabelSelector) {
    q.push("(true");
    if !selector.match_labels.is_empty() {
        q.push(format_args!(" and {alias}.labels @> "));
        q.push_bind(sqlx::types::Json(selector.match_labels.clone()));
        q.push("::jsonb");
    }
    for r in &selector.match_expressions {
        q.push(" and ");
        match r.operator {
            SelectorOperator::In => {
                q.push(format_args!("coalesce(({alias}.labels ->> "));
                q.push_bind(r.key.clone());
                q.push(") = any(");
                q.push_bind(r.values.clone());
                q.push("), false)");
            }
            // Also true without the key (Kubernetes' rule, as `LabelSelector::matches`).
            SelectorOperator::NotIn => {
                q.push(format_args!("not coalesce(({alias}.labels ->> "));
                q.push_bind(r.key.clone());
                q.push(") = any(");
                q.push_bind(r.values.clone());
                q.push("), false)");
            }
            SelectorOperator::Exists => {
                q.push(format_args!("jsonb_exists({alias}.labels, "));
                q.push_bind(r.key.clone());
                q.push(")");
            }
            SelectorOperator::DoesNotExist => {
                q.push(format_args!("not jsonb_exists({alias}.labels, "));
                q.push_bind(r.key.clone());
                q.push(")");
            }
        }
    }
    q.push(")");
}
