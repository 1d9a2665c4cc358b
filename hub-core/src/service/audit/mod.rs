//! Reading the audit log: filter by actor, action, target and time range,
//! newest first, paginated.

pub mod sign_in_refusals;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::types::AuditEntry;
use super::{Actor, Page, PageRequest, Role, Service};
use crate::db::audit::{self, AuditFilter};
use crate::{Error, Result};

/// Audit query (`GET /api/v1/audit?actor=&target=&since=&until=`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Who made the change, as recorded (`actor`: token name, email, sub).
    pub actor: Option<String>,
    /// A person, by `sub`, email (any case) or recorded name.
    pub person: Option<String>,
    /// A team: the access policy that granted the change, or a group of the
    /// person who made it.
    pub team: Option<String>,
    /// Action, e.g. `gate.replace`.
    pub action: Option<String>,
    /// Target kind: gate, override, cluster, api_token.
    pub target_kind: Option<String>,
    /// Target name (gate or cluster name, override id, token name).
    pub target: Option<String>,
    /// Entries at or after this instant (RFC 3339).
    pub since: Option<DateTime<Utc>>,
    /// Entries before this instant (RFC 3339).
    pub until: Option<DateTime<Utc>>,
    /// Page size, 1..=1000 (default 100).
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

impl Service {
    /// Lists audit entries, newest first (viewer).
    pub async fn list_audit(&self, actor: &Actor, q: &AuditQuery) -> Result<Page<AuditEntry>> {
        actor.require(Role::Viewer)?;
        if let (Some(s), Some(u)) = (q.since, q.until)
            && u <= s
        {
            return Err(Error::invalid("until", "must be after 'since'"));
        }
        let page = PageRequest {
            limit: q.limit,
            cursor: q.cursor.clone(),
        };
        let limit = page.limit()?;
        let before: Option<i64> = page.key()?;
        let filter = AuditFilter {
            actor: q.actor.clone(),
            person: q.person.clone(),
            team: q.team.clone(),
            action: q.action.clone(),
            target_kind: q.target_kind.clone(),
            target_name: q.target.clone(),
            since: q.since,
            until: q.until,
            within: None,
        };
        let mut conn = self.conn().await?;
        let mut filter = filter;
        if let Some(gates) = self.visible_gates(&mut conn, actor).await? {
            // A scoped reader sees the entries about its gates (overrides
            // included) and its clusters, nothing else.
            let scope = actor.read_scope();
            let clusters = crate::db::clusters::scoped_cached(&mut conn, &self.scoped).await?;
            filter.within = Some((
                gates.into_iter().collect(),
                clusters
                    .iter()
                    .filter(|c| scope.as_ref().is_none_or(|s| s.cluster(&c.name, &c.labels)))
                    .map(|c| c.name.clone())
                    .collect(),
            ));
        }
        let rows = audit::list(&mut conn, &filter, before, i64::from(limit) + 1).await?;
        Ok(super::page::from_rows(rows, limit, |r| r.id, Into::into))
    }
}
