//! `AdminService` freeze methods (the emergency stop): the REST `/api/v1/freezes`
//! operations over gRPC, calling the same service-layer methods (admin role, scope,
//! validation naming the field, audit).

use fleetgate_api_types::{FreezeRequest, OverrideClusters, UnfreezeRequest};
use fleetgate_policy::LabelSelector;
use fleetgate_proto::v1 as pb;
use tonic::{Request, Response};

use super::admin::{AdminApi, Res, ok};
use super::admin_convert::{freeze_info, non_empty, opt_time, uuid};
use super::auth::api_actor;
use super::convert::invalid;

impl AdminApi {
    pub(super) async fn freezes_freeze(
        &self,
        req: Request<pb::FreezeRequest>,
    ) -> Res<pb::FreezeInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let selector = match non_empty(&r.cluster_selector) {
            None => None,
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| invalid("cluster_selector", e.message))?)
            }
        };
        let clusters = (!r.clusters.is_empty() || selector.is_some()).then_some(OverrideClusters {
            names: r.clusters,
            selector,
        });
        let input = FreezeRequest {
            reason: r.reason,
            clusters,
            duration: non_empty(&r.r#for).map(str::to_string),
            until: opt_time("until", r.until.as_ref())?,
        };
        let f = ok(self.service.freeze(&actor, input).await)?;
        Ok(Response::new(freeze_info(f)))
    }

    pub(super) async fn freezes_unfreeze(
        &self,
        req: Request<pb::UnfreezeRequest>,
    ) -> Res<pb::UnfreezeResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let id = match non_empty(&r.id) {
            None => None,
            Some(i) => Some(uuid("id", i)?),
        };
        let ended = ok(self
            .service
            .unfreeze(
                &actor,
                UnfreezeRequest {
                    reason: r.reason,
                    id,
                },
            )
            .await)?;
        Ok(Response::new(pb::UnfreezeResponse {
            ended: ended.into_iter().map(freeze_info).collect(),
        }))
    }

    pub(super) async fn freezes_list(
        &self,
        req: Request<pb::ListFreezesRequest>,
    ) -> Res<pb::ListFreezesResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let all = req.into_inner().all;
        let freezes = ok(self.service.list_freezes(&actor, all).await)?;
        Ok(Response::new(pb::ListFreezesResponse {
            freezes: freezes.into_iter().map(freeze_info).collect(),
        }))
    }
}
