//! `AdminService` gate, override and rollout methods: the REST `/api/v1/gates`,
//! `/api/v1/overrides` and rollout operations over gRPC, calling the same
//! service-layer methods (roles, scope, validation naming the field, audit).

use fleetgate_proto::v1 as pb;
use tonic::{Request, Response};

use super::admin::{AdminApi, Res, ok};
use super::admin_approvals::override_input;
use super::admin_convert as conv;
use super::auth::api_actor;
use super::convert::{invalid, to_status};
use crate::Error;
use crate::service::overrides::OverrideQuery;

fn parse_manifest(text: &str) -> Result<fleetgate_policy::Gate, tonic::Status> {
    if text.trim().is_empty() {
        return Err(invalid("manifest", "must not be empty"));
    }
    fleetgate_policy::parse_gate(text).map_err(|e| to_status(Error::from_policy(e)))
}

fn version(v: u64) -> Option<i64> {
    (v != 0).then(|| i64::try_from(v).unwrap_or(i64::MAX))
}

impl AdminApi {
    pub(super) async fn gates_list(
        &self,
        req: Request<pb::ListGatesRequest>,
    ) -> Res<pb::ListGatesResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let page = ok(self
            .service
            .list_gates(&actor, &conv::page(r.limit, &r.cursor))
            .await)?;
        Ok(Response::new(pb::ListGatesResponse {
            gates: page.items.into_iter().map(conv::gate).collect(),
            next_cursor: conv::cursor(page.next_cursor),
        }))
    }

    pub(super) async fn gates_get(&self, req: Request<pb::GetGateRequest>) -> Res<pb::GateInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let g = ok(self.service.get_gate(&actor, &req.get_ref().name).await)?;
        Ok(Response::new(conv::gate(g)))
    }

    pub(super) async fn gates_create(
        &self,
        req: Request<pb::CreateGateRequest>,
    ) -> Res<pb::GateInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let gate = parse_manifest(&r.manifest)?;
        let g = ok(self
            .service
            .create_gate(&actor, gate, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(conv::gate(g)))
    }

    pub(super) async fn gates_update(
        &self,
        req: Request<pb::UpdateGateRequest>,
    ) -> Res<pb::GateInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let gate = parse_manifest(&r.manifest)?;
        let g = ok(self
            .service
            .replace_gate(
                &actor,
                &r.name,
                gate,
                version(r.expected_version),
                conv::non_empty(&r.reason),
            )
            .await)?;
        Ok(Response::new(conv::gate(g)))
    }

    pub(super) async fn gates_preview_change(
        &self,
        req: Request<pb::PreviewGateChangeRequest>,
    ) -> Res<pb::GateImpact> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let gate = parse_manifest(&r.manifest)?;
        let dry_run = if r.name.is_empty() {
            crate::service::gates::impact::DryRun::Create
        } else {
            crate::service::gates::impact::DryRun::Replace {
                name: &r.name,
                if_match: version(r.expected_version),
            }
        };
        let impact = ok(self.service.gate_impact(&actor, gate, dry_run).await)?;
        Ok(Response::new(conv::gate_impact(impact)))
    }

    pub(super) async fn gates_delete(
        &self,
        req: Request<pb::DeleteGateRequest>,
    ) -> Res<pb::DeleteGateResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        ok(self
            .service
            .delete_gate(
                &actor,
                &r.name,
                version(r.expected_version),
                conv::non_empty(&r.reason),
            )
            .await)?;
        Ok(Response::new(pb::DeleteGateResponse { name: r.name }))
    }

    pub(super) async fn gates_preview(
        &self,
        req: Request<pb::PreviewGateRequest>,
    ) -> Res<pb::PreviewGateResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let from = conv::opt_time("from", r.from.as_ref())?;
        let to = conv::opt_time("to", r.to.as_ref())?;
        let p = ok(self
            .service
            .preview_gate(&actor, &r.name, from, to, conv::non_empty(&r.cluster))
            .await)?;
        Ok(Response::new(conv::preview(p)))
    }

    pub(super) async fn overrides_create(
        &self,
        req: Request<pb::CreateOverrideRequest>,
    ) -> Res<pb::OverrideInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let (gate, state, input) = override_input(req.into_inner())?;
        let o = ok(self
            .service
            .create_override(&actor, &gate, state, input)
            .await)?;
        Ok(Response::new(conv::override_info(o)))
    }

    pub(super) async fn overrides_list(
        &self,
        req: Request<pb::ListOverridesRequest>,
    ) -> Res<pb::ListOverridesResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let q = OverrideQuery {
            gate: conv::non_empty(&r.gate).map(str::to_string),
            all: Some(r.all),
            limit: (r.limit != 0).then_some(r.limit),
            cursor: conv::non_empty(&r.cursor).map(str::to_string),
        };
        let page = ok(self.service.list_overrides(&actor, &q).await)?;
        Ok(Response::new(pb::ListOverridesResponse {
            overrides: page.items.into_iter().map(conv::override_info).collect(),
            next_cursor: conv::cursor(page.next_cursor),
        }))
    }

    pub(super) async fn overrides_cancel(
        &self,
        req: Request<pb::CancelOverrideRequest>,
    ) -> Res<pb::OverrideInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let id = conv::uuid("id", &r.id)?;
        let o = ok(self
            .service
            .cancel_override(&actor, id, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(conv::override_info(o)))
    }

    pub(super) async fn rollouts_get(
        &self,
        req: Request<pb::GetRolloutRequest>,
    ) -> Res<pb::RolloutInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let s = ok(self.service.rollout_status(&actor, &r.gate).await)?;
        Ok(Response::new(conv::rollout_info(s)))
    }

    pub(super) async fn rollouts_command(
        &self,
        req: Request<pb::RolloutCommandRequest>,
    ) -> Res<pb::RolloutInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let command: crate::service::rollouts::Command = r
            .command
            .parse()
            .map_err(|_| invalid("command", "expected pause, resume, abort or release-next"))?;
        let (s, events) = ok(self.service.rollout_command(&actor, &r.gate, command).await)?;
        self.rollout_metrics.record(&events);
        Ok(Response::new(conv::rollout_info(s)))
    }
}
