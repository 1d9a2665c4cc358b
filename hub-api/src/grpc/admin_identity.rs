//! `AdminService` audit, API token and session methods, over the same
//! service-layer methods REST calls (admin role, audit of every change).

use fleetgate_proto::v1 as pb;
use tonic::{Request, Response};

use super::admin::{AdminApi, Res, ok};
use super::admin_convert as conv;
use super::auth::api_actor;
use super::convert::to_status;
use crate::Error;
use crate::service::audit::AuditQuery;
use crate::service::types::CreateToken;

impl AdminApi {
    pub(super) async fn audit_list(
        &self,
        req: Request<pb::ListAuditRequest>,
    ) -> Res<pb::ListAuditResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let owned = |s: &str| conv::non_empty(s).map(str::to_string);
        let q = AuditQuery {
            actor: owned(&r.actor),
            person: owned(&r.person),
            team: owned(&r.team),
            action: owned(&r.action),
            target_kind: owned(&r.target_kind),
            target: owned(&r.target_name),
            since: conv::opt_time("since", r.since.as_ref())?,
            until: conv::opt_time("until", r.until.as_ref())?,
            limit: (r.limit != 0).then_some(r.limit),
            cursor: owned(&r.cursor),
        };
        let page = ok(self.service.list_audit(&actor, &q).await)?;
        Ok(Response::new(pb::ListAuditResponse {
            entries: page.items.into_iter().map(conv::audit_entry).collect(),
            next_cursor: conv::cursor(page.next_cursor),
        }))
    }

    pub(super) async fn tokens_create(
        &self,
        req: Request<pb::CreateApiTokenRequest>,
    ) -> Res<pb::CreateApiTokenResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let scope = if r.scope.trim().is_empty() {
            None
        } else {
            Some(fleetgate_policy::yaml::from_str(&r.scope).map_err(|e| {
                let e = e.within("scope");
                to_status(Error::invalid(e.path, e.message))
            })?)
        };
        let input = CreateToken {
            name: r.name,
            role: r.role,
            scope,
        };
        let t = ok(self
            .service
            .create_token(&actor, input, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(pb::CreateApiTokenResponse {
            info: Some(conv::api_token(t.token)),
            token: t.secret,
        }))
    }

    pub(super) async fn tokens_list(
        &self,
        req: Request<pb::ListApiTokensRequest>,
    ) -> Res<pb::ListApiTokensResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let page = ok(self
            .service
            .list_tokens(&actor, &conv::page(r.limit, &r.cursor))
            .await)?;
        Ok(Response::new(pb::ListApiTokensResponse {
            tokens: page.items.into_iter().map(conv::api_token).collect(),
            next_cursor: conv::cursor(page.next_cursor),
        }))
    }

    pub(super) async fn tokens_revoke(
        &self,
        req: Request<pb::RevokeApiTokenRequest>,
    ) -> Res<pb::ApiTokenInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let id = conv::uuid("id", &r.id)?;
        let t = ok(self
            .service
            .revoke_token(&actor, id, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(conv::api_token(t)))
    }

    pub(super) async fn sessions_list(
        &self,
        req: Request<pb::ListSessionsRequest>,
    ) -> Res<pb::ListSessionsResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let sessions = ok(self
            .service
            .list_sessions(&actor, None, conv::non_empty(&r.subject))
            .await)?;
        Ok(Response::new(pb::ListSessionsResponse {
            sessions: sessions.into_iter().map(conv::session).collect(),
        }))
    }

    pub(super) async fn sessions_end(
        &self,
        req: Request<pb::EndSessionsRequest>,
    ) -> Res<pb::EndSessionsResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let body = fleetgate_api_types::EndSessions {
            subject: r.subject.clone(),
            issuer: conv::non_empty(&r.issuer).map(String::from),
            reason: conv::non_empty(&r.reason).map(String::from),
            id: optional_uuid("id", &r.id)?,
        };
        let done = ok(self.service.end_sessions(&actor, &body).await)?;
        Ok(Response::new(pb::EndSessionsResponse { ended: done.ended }))
    }

    pub(super) async fn my_sessions_list(
        &self,
        req: Request<pb::ListMySessionsRequest>,
    ) -> Res<pb::ListSessionsResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let sessions = ok(self.service.my_sessions(&actor, None).await)?;
        Ok(Response::new(pb::ListSessionsResponse {
            sessions: sessions.into_iter().map(conv::session).collect(),
        }))
    }

    pub(super) async fn my_sessions_end(
        &self,
        req: Request<pb::EndMySessionsRequest>,
    ) -> Res<pb::EndSessionsResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let body = fleetgate_api_types::EndMySessions {
            id: optional_uuid("id", &req.get_ref().id)?,
            keep_current: false,
        };
        let done = ok(self.service.end_my_sessions(&actor, None, &body).await)?;
        Ok(Response::new(pb::EndSessionsResponse { ended: done.ended }))
    }
}

/// An optional UUID field: empty is none.
fn optional_uuid(field: &str, s: &str) -> Result<Option<uuid::Uuid>, tonic::Status> {
    conv::non_empty(s).map(|s| conv::uuid(field, s)).transpose()
}
