//! `AdminService` access-policy methods: the REST `/api/v1/access-policies`
//! operations over gRPC, calling the same service-layer methods (unscoped
//! admins only, validation naming the field, audit).

use fleetgate_api_types::{AccessPolicyRecord, parse_access_policy};
use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1 as pb;
use tonic::{Request, Response};

use super::admin::{AdminApi, Res, ok};
use super::admin_convert::{self as conv, non_empty};
use super::auth::api_actor;
use super::convert::{invalid, to_status};
use crate::Error;

fn info(r: AccessPolicyRecord) -> pb::AccessPolicyInfo {
    pb::AccessPolicyInfo {
        manifest_json: serde_json::to_string(&r.manifest).unwrap_or_default(),
        name: r.name,
        version: u64::try_from(r.version).unwrap_or_default(),
        created_at: Some(to_timestamp(r.created_at)),
        updated_at: Some(to_timestamp(r.updated_at)),
    }
}

impl AdminApi {
    pub(super) async fn access_policies_list(
        &self,
        req: Request<pb::ListAccessPoliciesRequest>,
    ) -> Res<pb::ListAccessPoliciesResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let page = ok(self
            .service
            .list_access_policies(&actor, &conv::page(r.limit, &r.cursor))
            .await)?;
        Ok(Response::new(pb::ListAccessPoliciesResponse {
            policies: page.items.into_iter().map(info).collect(),
            next_cursor: conv::cursor(page.next_cursor),
        }))
    }

    pub(super) async fn access_policies_get(
        &self,
        req: Request<pb::GetAccessPolicyRequest>,
    ) -> Res<pb::AccessPolicyInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let p = ok(self
            .service
            .get_access_policy(&actor, &req.get_ref().name)
            .await)?;
        Ok(Response::new(info(p)))
    }

    pub(super) async fn access_policies_apply(
        &self,
        req: Request<pb::ApplyAccessPolicyRequest>,
    ) -> Res<pb::ApplyAccessPolicyResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        if r.manifest.trim().is_empty() {
            return Err(invalid("manifest", "must not be empty"));
        }
        let policy =
            parse_access_policy(&r.manifest).map_err(|e| to_status(Error::from_policy(e)))?;
        let name = policy.name().to_string();
        let expected = (r.expected_version != 0)
            .then(|| i64::try_from(r.expected_version).unwrap_or(i64::MAX));
        let (rec, created) = ok(self
            .service
            .apply_access_policy(&actor, &name, policy, expected, non_empty(&r.reason))
            .await)?;
        Ok(Response::new(pb::ApplyAccessPolicyResponse {
            policy: Some(info(rec)),
            created,
        }))
    }

    pub(super) async fn access_policies_delete(
        &self,
        req: Request<pb::DeleteAccessPolicyRequest>,
    ) -> Res<pb::DeleteAccessPolicyResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        ok(self
            .service
            .delete_access_policy(&actor, &r.name, non_empty(&r.reason))
            .await)?;
        Ok(Response::new(pb::DeleteAccessPolicyResponse {
            name: r.name,
        }))
    }
}
