//! `AdminService`: the REST API's operations over gRPC for integrations. Each
//! method authenticates the API token, converts the request, calls the same
//! service-layer method REST calls (roles, validation, audit live there) and
//! converts the result. This file is the trait's table of contents; the bodies
//! live by topic: `admin_gates` (gates, overrides, rollouts), `admin_clusters`
//! (clusters, status), `admin_identity` (audit, tokens, sessions),
//! `admin_webhooks`, `admin_access`, `admin_freezes`, `admin_approvals`,
//! `admin_admission` (admission webhooks); `WatchFleet` in `watch_fleet`.

use fleetgate_proto::v1 as pb;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::admin_convert::Decision;
use super::auth::{api_actor, bearer};
use super::convert::to_status;
use super::watch_fleet::{FleetStream, watch_fleet};
use crate::fleet_feed::FleetFeed;
use crate::metrics::RolloutMetrics;
use crate::replica::Replica;
use crate::service::Service;

/// The admin service of one replica.
#[derive(Clone)]
pub struct AdminApi {
    pub(super) service: Service,
    /// Webhook egress and link settings (test messages, URL checks).
    pub(super) notify: crate::webhook_delivery::DeliveryConfig,
    fleet: FleetFeed,
    pub(super) rollout_metrics: RolloutMetrics,
    shutdown: CancellationToken,
}

impl AdminApi {
    /// The admin service of `replica`; `WatchFleet` streams end when
    /// `shutdown` is cancelled.
    pub fn new(replica: &Replica, shutdown: CancellationToken) -> Self {
        Self {
            service: replica.service.clone(),
            notify: replica.notifier.delivery.clone(),
            fleet: replica.fleet.clone(),
            rollout_metrics: replica.rollout_metrics.clone(),
            shutdown,
        }
    }
}

/// What every `AdminService` method answers.
pub(super) type Res<T> = Result<Response<T>, Status>;

/// A service-layer result as a gRPC status (INVALID_ARGUMENT naming the field, …).
pub(super) fn ok<T>(r: crate::Result<T>) -> Result<T, Status> {
    r.map_err(to_status)
}

#[tonic::async_trait]
impl pb::admin_service_server::AdminService for AdminApi {
    async fn list_gates(&self, req: Request<pb::ListGatesRequest>) -> Res<pb::ListGatesResponse> {
        self.gates_list(req).await
    }

    async fn get_gate(&self, req: Request<pb::GetGateRequest>) -> Res<pb::GateInfo> {
        self.gates_get(req).await
    }

    async fn create_gate(&self, req: Request<pb::CreateGateRequest>) -> Res<pb::GateInfo> {
        self.gates_create(req).await
    }

    async fn update_gate(&self, req: Request<pb::UpdateGateRequest>) -> Res<pb::GateInfo> {
        self.gates_update(req).await
    }

    async fn preview_gate_change(
        &self,
        req: Request<pb::PreviewGateChangeRequest>,
    ) -> Res<pb::GateImpact> {
        self.gates_preview_change(req).await
    }

    async fn delete_gate(
        &self,
        req: Request<pb::DeleteGateRequest>,
    ) -> Res<pb::DeleteGateResponse> {
        self.gates_delete(req).await
    }

    async fn preview_gate(
        &self,
        req: Request<pb::PreviewGateRequest>,
    ) -> Res<pb::PreviewGateResponse> {
        self.gates_preview(req).await
    }

    async fn create_override(
        &self,
        req: Request<pb::CreateOverrideRequest>,
    ) -> Res<pb::OverrideInfo> {
        self.overrides_create(req).await
    }

    async fn list_overrides(
        &self,
        req: Request<pb::ListOverridesRequest>,
    ) -> Res<pb::ListOverridesResponse> {
        self.overrides_list(req).await
    }

    async fn cancel_override(
        &self,
        req: Request<pb::CancelOverrideRequest>,
    ) -> Res<pb::OverrideInfo> {
        self.overrides_cancel(req).await
    }

    async fn get_rollout(&self, req: Request<pb::GetRolloutRequest>) -> Res<pb::RolloutInfo> {
        self.rollouts_get(req).await
    }

    async fn rollout_command(
        &self,
        req: Request<pb::RolloutCommandRequest>,
    ) -> Res<pb::RolloutInfo> {
        self.rollouts_command(req).await
    }

    async fn register_cluster(
        &self,
        req: Request<pb::RegisterClusterRequest>,
    ) -> Res<pb::RegisterClusterResponse> {
        self.clusters_register(req).await
    }

    async fn list_clusters(
        &self,
        req: Request<pb::ListClustersRequest>,
    ) -> Res<pb::ListClustersResponse> {
        self.clusters_list(req).await
    }

    async fn get_cluster(&self, req: Request<pb::GetClusterRequest>) -> Res<pb::ClusterInfo> {
        self.clusters_get(req).await
    }

    async fn set_cluster_labels(
        &self,
        req: Request<pb::SetClusterLabelsRequest>,
    ) -> Res<pb::ClusterInfo> {
        self.clusters_relabel(req).await
    }

    async fn delete_cluster(
        &self,
        req: Request<pb::DeleteClusterRequest>,
    ) -> Res<pb::DeleteClusterResponse> {
        self.clusters_delete(req).await
    }

    async fn rotate_cluster_token(
        &self,
        req: Request<pb::RotateClusterTokenRequest>,
    ) -> Res<pb::RegisterClusterResponse> {
        self.clusters_rotate_token(req).await
    }

    async fn get_cluster_status(
        &self,
        req: Request<pb::GetClusterStatusRequest>,
    ) -> Res<pb::ClusterStatus> {
        self.clusters_status(req).await
    }

    async fn get_fleet_status(
        &self,
        req: Request<pb::GetFleetStatusRequest>,
    ) -> Res<pb::FleetStatus> {
        self.fleet_status(req).await
    }

    async fn list_audit(&self, req: Request<pb::ListAuditRequest>) -> Res<pb::ListAuditResponse> {
        self.audit_list(req).await
    }

    async fn create_api_token(
        &self,
        req: Request<pb::CreateApiTokenRequest>,
    ) -> Res<pb::CreateApiTokenResponse> {
        self.tokens_create(req).await
    }

    async fn list_api_tokens(
        &self,
        req: Request<pb::ListApiTokensRequest>,
    ) -> Res<pb::ListApiTokensResponse> {
        self.tokens_list(req).await
    }

    async fn revoke_api_token(
        &self,
        req: Request<pb::RevokeApiTokenRequest>,
    ) -> Res<pb::ApiTokenInfo> {
        self.tokens_revoke(req).await
    }

    async fn list_sessions(
        &self,
        req: Request<pb::ListSessionsRequest>,
    ) -> Res<pb::ListSessionsResponse> {
        self.sessions_list(req).await
    }

    async fn end_sessions(
        &self,
        req: Request<pb::EndSessionsRequest>,
    ) -> Res<pb::EndSessionsResponse> {
        self.sessions_end(req).await
    }

    async fn list_webhooks(
        &self,
        req: Request<pb::ListWebhooksRequest>,
    ) -> Res<pb::ListWebhooksResponse> {
        self.webhooks_list(req).await
    }

    async fn get_webhook(&self, req: Request<pb::GetWebhookRequest>) -> Res<pb::WebhookInfo> {
        self.webhooks_get(req).await
    }

    async fn create_webhook(
        &self,
        req: Request<pb::CreateWebhookRequest>,
    ) -> Res<pb::WebhookWithSecret> {
        self.webhooks_create(req).await
    }

    async fn update_webhook(&self, req: Request<pb::UpdateWebhookRequest>) -> Res<pb::WebhookInfo> {
        self.webhooks_update(req).await
    }

    async fn delete_webhook(&self, req: Request<pb::DeleteWebhookRequest>) -> Res<pb::WebhookInfo> {
        self.webhooks_delete(req).await
    }

    async fn rotate_webhook_secret(
        &self,
        req: Request<pb::RotateWebhookSecretRequest>,
    ) -> Res<pb::WebhookWithSecret> {
        self.webhooks_rotate(req).await
    }

    async fn test_webhook(
        &self,
        req: Request<pb::TestWebhookRequest>,
    ) -> Res<pb::WebhookTestResult> {
        self.webhooks_test(req).await
    }

    async fn list_webhook_deliveries(
        &self,
        req: Request<pb::ListWebhookDeliveriesRequest>,
    ) -> Res<pb::ListWebhookDeliveriesResponse> {
        self.webhooks_deliveries(req).await
    }

    async fn get_webhook_delivery(
        &self,
        req: Request<pb::GetWebhookDeliveryRequest>,
    ) -> Res<pb::WebhookDelivery> {
        self.webhooks_delivery(req, false).await
    }

    async fn redeliver_webhook(
        &self,
        req: Request<pb::GetWebhookDeliveryRequest>,
    ) -> Res<pb::WebhookDelivery> {
        self.webhooks_delivery(req, true).await
    }

    async fn set_webhook_enabled(
        &self,
        req: Request<pb::SetWebhookEnabledRequest>,
    ) -> Res<pb::WebhookInfo> {
        self.webhooks_set_enabled(req).await
    }

    async fn list_access_policies(
        &self,
        req: Request<pb::ListAccessPoliciesRequest>,
    ) -> Res<pb::ListAccessPoliciesResponse> {
        self.access_policies_list(req).await
    }

    async fn get_access_policy(
        &self,
        req: Request<pb::GetAccessPolicyRequest>,
    ) -> Res<pb::AccessPolicyInfo> {
        self.access_policies_get(req).await
    }

    async fn apply_access_policy(
        &self,
        req: Request<pb::ApplyAccessPolicyRequest>,
    ) -> Res<pb::ApplyAccessPolicyResponse> {
        self.access_policies_apply(req).await
    }

    async fn delete_access_policy(
        &self,
        req: Request<pb::DeleteAccessPolicyRequest>,
    ) -> Res<pb::DeleteAccessPolicyResponse> {
        self.access_policies_delete(req).await
    }

    async fn freeze(&self, req: Request<pb::FreezeRequest>) -> Res<pb::FreezeInfo> {
        self.freezes_freeze(req).await
    }

    async fn unfreeze(&self, req: Request<pb::UnfreezeRequest>) -> Res<pb::UnfreezeResponse> {
        self.freezes_unfreeze(req).await
    }

    async fn list_freezes(
        &self,
        req: Request<pb::ListFreezesRequest>,
    ) -> Res<pb::ListFreezesResponse> {
        self.freezes_list(req).await
    }

    async fn request_override(
        &self,
        req: Request<pb::CreateOverrideRequest>,
    ) -> Res<pb::OverrideOutcome> {
        self.approvals_request_override(req).await
    }

    async fn list_approvals(
        &self,
        req: Request<pb::ListApprovalsRequest>,
    ) -> Res<pb::ListApprovalsResponse> {
        self.approvals_list(req).await
    }

    async fn get_approval(&self, req: Request<pb::GetApprovalRequest>) -> Res<pb::ApprovalInfo> {
        self.approvals_get(req).await
    }

    async fn approve_request(
        &self,
        req: Request<pb::DecideApprovalRequest>,
    ) -> Res<pb::ApprovalInfo> {
        self.approvals_decide(req, Decision::Approve).await
    }

    async fn reject_request(
        &self,
        req: Request<pb::DecideApprovalRequest>,
    ) -> Res<pb::ApprovalInfo> {
        self.approvals_decide(req, Decision::Reject).await
    }

    async fn cancel_approval(
        &self,
        req: Request<pb::DecideApprovalRequest>,
    ) -> Res<pb::ApprovalInfo> {
        self.approvals_decide(req, Decision::Cancel).await
    }

    async fn list_my_sessions(
        &self,
        req: Request<pb::ListMySessionsRequest>,
    ) -> Res<pb::ListSessionsResponse> {
        self.my_sessions_list(req).await
    }

    async fn end_my_sessions(
        &self,
        req: Request<pb::EndMySessionsRequest>,
    ) -> Res<pb::EndSessionsResponse> {
        self.my_sessions_end(req).await
    }

    async fn list_admission_webhooks(
        &self,
        req: Request<pb::ListAdmissionWebhooksRequest>,
    ) -> Res<pb::ListAdmissionWebhooksResponse> {
        self.admission_list(req).await
    }

    async fn get_admission_webhook(
        &self,
        req: Request<pb::GetAdmissionWebhookRequest>,
    ) -> Res<pb::AdmissionWebhookInfo> {
        self.admission_get(req).await
    }

    async fn apply_admission_webhook(
        &self,
        req: Request<pb::ApplyAdmissionWebhookRequest>,
    ) -> Res<pb::AdmissionWebhookInfo> {
        self.admission_apply(req).await
    }

    async fn delete_admission_webhook(
        &self,
        req: Request<pb::DeleteAdmissionWebhookRequest>,
    ) -> Res<pb::AdmissionWebhookInfo> {
        self.admission_delete(req).await
    }

    type WatchFleetStream = FleetStream;

    async fn watch_fleet(&self, req: Request<pb::WatchFleetRequest>) -> Res<FleetStream> {
        let actor = api_actor(&self.service, &req).await?;
        let token = bearer(&req)?;
        let filter = req.into_inner();
        // Fail fast (before the stream starts) if the first read fails.
        let (first, updates) = ok(self.fleet.subscribe(&actor).await)?;
        Ok(Response::new(watch_fleet(
            self.service.clone(),
            updates,
            self.shutdown.clone(),
            token,
            filter,
            first,
        )))
    }
}
