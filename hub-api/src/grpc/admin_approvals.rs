//! `AdminService` approval methods: `RequestOverride` and the REST
//! `/api/v1/approvals` operations over gRPC, calling the same service-layer
//! methods (roles, requester ≠ approver, audit live there).

use fleetgate_api_types::OverrideOutcome;
use fleetgate_proto::v1 as pb;
use tonic::{Request, Response, Status};

use fleetgate_policy::{GateState, LabelSelector};

use super::admin::{AdminApi, Res, ok};
use super::admin_convert::{self as conv, Decision, approval_info, non_empty};
use super::auth::api_actor;
use super::convert::invalid;
use crate::service::approvals::ApprovalQuery;
use crate::service::types::{OverrideClusters, OverrideRequest};

impl AdminApi {
    pub(super) async fn approvals_request_override(
        &self,
        req: Request<pb::CreateOverrideRequest>,
    ) -> Res<pb::OverrideOutcome> {
        let actor = api_actor(&self.service, &req).await?;
        let (gate, state, input) = override_input(req.into_inner())?;
        let outcome = ok(self
            .service
            .request_override(&actor, &gate, state, input)
            .await)?;
        let outcome = match outcome {
            OverrideOutcome::Created(o) => {
                pb::override_outcome::Outcome::Created(conv::override_info(*o))
            }
            OverrideOutcome::Pending(p) => {
                pb::override_outcome::Outcome::Pending(approval_info(*p))
            }
        };
        Ok(Response::new(pb::OverrideOutcome {
            outcome: Some(outcome),
        }))
    }

    pub(super) async fn approvals_list(
        &self,
        req: Request<pb::ListApprovalsRequest>,
    ) -> Res<pb::ListApprovalsResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let q = ApprovalQuery {
            gate: non_empty(&r.gate).map(str::to_string),
            status: non_empty(&r.status).map(str::to_string),
            limit: (r.limit != 0).then_some(r.limit),
            cursor: non_empty(&r.cursor).map(str::to_string),
        };
        let page = ok(self.service.list_approval_requests(&actor, &q).await)?;
        Ok(Response::new(pb::ListApprovalsResponse {
            approvals: page.items.into_iter().map(approval_info).collect(),
            next_cursor: conv::cursor(page.next_cursor),
        }))
    }

    pub(super) async fn approvals_get(
        &self,
        req: Request<pb::GetApprovalRequest>,
    ) -> Res<pb::ApprovalInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let id = conv::uuid("id", &req.get_ref().id)?;
        let r = ok(self.service.get_approval_request(&actor, id).await)?;
        Ok(Response::new(approval_info(r)))
    }

    pub(super) async fn approvals_decide(
        &self,
        req: Request<pb::DecideApprovalRequest>,
        how: Decision,
    ) -> Res<pb::ApprovalInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let id = conv::uuid("id", &r.id)?;
        let reason = non_empty(&r.reason);
        let done = match how {
            Decision::Approve => self.service.approve_request(&actor, id, reason).await,
            Decision::Reject => {
                self.service
                    .reject_request(&actor, id, reason.unwrap_or(""))
                    .await
            }
            Decision::Cancel => self.service.cancel_request(&actor, id, reason).await,
        };
        Ok(Response::new(approval_info(ok(done)?)))
    }
}

/// A `CreateOverrideRequest` as the service's input: the gate, the state and the
/// override; INVALID_ARGUMENT naming the field.
pub(super) fn override_input(
    r: pb::CreateOverrideRequest,
) -> Result<(String, GateState, OverrideRequest), Status> {
    let state: GateState = r
        .state
        .parse()
        .map_err(|_| invalid("state", format!("'{}' is not open or closed", r.state)))?;
    let selector = match conv::non_empty(&r.cluster_selector) {
        None => None,
        Some(s) => {
            Some(LabelSelector::parse(s).map_err(|e| invalid("cluster_selector", e.message))?)
        }
    };
    let clusters = (!r.clusters.is_empty() || selector.is_some()).then_some(OverrideClusters {
        names: r.clusters,
        selector,
    });
    let input = OverrideRequest {
        duration: conv::non_empty(&r.r#for).map(str::to_string),
        reason: r.reason,
        clusters,
        starts_at: conv::opt_time("starts_at", r.starts_at.as_ref())?,
        ticket: conv::non_empty(&r.ticket).map(str::to_string),
        emergency: r.emergency,
    };
    Ok((r.gate, state, input))
}
