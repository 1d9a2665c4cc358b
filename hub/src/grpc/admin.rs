//! `AdminService`: the REST API's operations over gRPC for integrations. Each
//! method authenticates the API token, converts the request, calls the same
//! service-layer method REST calls (roles, validation, audit live there) and
//! converts the result. `WatchFleet` lives in `watch_fleet`.

use fleetgate_policy::{GateState, LabelSelector};
use fleetgate_proto::v1 as pb;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

use super::admin_convert as conv;
use super::auth::{api_actor, bearer};
use super::convert::{invalid, to_status};
use super::watch_fleet::{FleetStream, watch_fleet};
use crate::Error;
use crate::fleet_feed::FleetFeed;
use crate::metrics::RolloutMetrics;
use crate::replica::Replica;
use crate::service::Service;
use crate::service::audit::AuditQuery;
use crate::service::overrides::OverrideQuery;
use crate::service::types::{
    CreateToken, OverrideClusters, OverrideRequest, RegisterCluster, Relabel,
};

/// The admin service of one replica.
#[derive(Clone)]
pub struct AdminApi {
    pub(super) service: Service,
    /// Webhook egress and link settings (test messages, URL checks).
    pub(super) notify: crate::notify::deliver::DeliveryConfig,
    fleet: FleetFeed,
    rollout_metrics: RolloutMetrics,
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

type Res<T> = Result<Response<T>, Status>;

fn ok<T>(r: crate::Result<T>) -> Result<T, Status> {
    r.map_err(to_status)
}

fn parse_manifest(text: &str) -> Result<fleetgate_policy::Gate, Status> {
    if text.trim().is_empty() {
        return Err(invalid("manifest", "must not be empty"));
    }
    fleetgate_policy::parse_gate(text).map_err(|e| to_status(Error::from_policy(e)))
}

fn version(v: u64) -> Option<i64> {
    (v != 0).then(|| i64::try_from(v).unwrap_or(i64::MAX))
}

#[tonic::async_trait]
impl pb::admin_service_server::AdminService for AdminApi {
    async fn list_gates(&self, req: Request<pb::ListGatesRequest>) -> Res<pb::ListGatesResponse> {
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

    async fn get_gate(&self, req: Request<pb::GetGateRequest>) -> Res<pb::GateInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let g = ok(self.service.get_gate(&actor, &req.get_ref().name).await)?;
        Ok(Response::new(conv::gate(g)))
    }

    async fn create_gate(&self, req: Request<pb::CreateGateRequest>) -> Res<pb::GateInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let gate = parse_manifest(&r.manifest)?;
        let g = ok(self
            .service
            .create_gate(&actor, gate, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(conv::gate(g)))
    }

    async fn update_gate(&self, req: Request<pb::UpdateGateRequest>) -> Res<pb::GateInfo> {
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

    async fn preview_gate_change(
        &self,
        req: Request<pb::PreviewGateChangeRequest>,
    ) -> Res<pb::GateImpact> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let gate = parse_manifest(&r.manifest)?;
        let dry_run = if r.name.is_empty() {
            crate::service::impact::DryRun::Create
        } else {
            crate::service::impact::DryRun::Replace {
                name: &r.name,
                if_match: version(r.expected_version),
            }
        };
        let impact = ok(self.service.gate_impact(&actor, gate, dry_run).await)?;
        Ok(Response::new(conv::gate_impact(impact)))
    }

    async fn delete_gate(
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

    async fn preview_gate(
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

    async fn create_override(
        &self,
        req: Request<pb::CreateOverrideRequest>,
    ) -> Res<pb::OverrideInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
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
        let o = ok(self
            .service
            .create_override(&actor, &r.gate, state, input)
            .await)?;
        Ok(Response::new(conv::override_info(o)))
    }

    async fn list_overrides(
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

    async fn cancel_override(
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

    async fn get_rollout(&self, req: Request<pb::GetRolloutRequest>) -> Res<pb::RolloutInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let s = ok(self.service.rollout_status(&actor, &r.gate).await)?;
        Ok(Response::new(conv::rollout_info(s)))
    }

    async fn rollout_command(
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

    async fn register_cluster(
        &self,
        req: Request<pb::RegisterClusterRequest>,
    ) -> Res<pb::RegisterClusterResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let input = RegisterCluster {
            name: r.name,
            labels: r.labels.into_iter().collect(),
        };
        let c = ok(self
            .service
            .register_cluster(&actor, input, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(pb::RegisterClusterResponse {
            cluster: Some(conv::cluster(c.cluster)),
            token: c.token,
        }))
    }

    async fn list_clusters(
        &self,
        req: Request<pb::ListClustersRequest>,
    ) -> Res<pb::ListClustersResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let page = ok(self
            .service
            .list_clusters_selected(
                &actor,
                &conv::page(r.limit, &r.cursor),
                conv::non_empty(&r.selector),
            )
            .await)?;
        Ok(Response::new(pb::ListClustersResponse {
            clusters: page.items.into_iter().map(conv::cluster).collect(),
            next_cursor: conv::cursor(page.next_cursor),
        }))
    }

    async fn get_cluster(&self, req: Request<pb::GetClusterRequest>) -> Res<pb::ClusterInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let c = ok(self.service.get_cluster(&actor, &req.get_ref().name).await)?;
        Ok(Response::new(conv::cluster(c)))
    }

    async fn set_cluster_labels(
        &self,
        req: Request<pb::SetClusterLabelsRequest>,
    ) -> Res<pb::ClusterInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let input = Relabel {
            labels: r.labels.into_iter().collect(),
        };
        let c = ok(self
            .service
            .relabel_cluster(&actor, &r.name, input, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(conv::cluster(c)))
    }

    async fn delete_cluster(
        &self,
        req: Request<pb::DeleteClusterRequest>,
    ) -> Res<pb::DeleteClusterResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        ok(self
            .service
            .delete_cluster(&actor, &r.name, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(pb::DeleteClusterResponse { name: r.name }))
    }

    async fn rotate_cluster_token(
        &self,
        req: Request<pb::RotateClusterTokenRequest>,
    ) -> Res<pb::RegisterClusterResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let c = ok(self
            .service
            .rotate_cluster_token(&actor, &r.name, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(pb::RegisterClusterResponse {
            cluster: Some(conv::cluster(c.cluster)),
            token: c.token,
        }))
    }

    async fn get_cluster_status(
        &self,
        req: Request<pb::GetClusterStatusRequest>,
    ) -> Res<pb::ClusterStatus> {
        let actor = api_actor(&self.service, &req).await?;
        let s = ok(self
            .service
            .cluster_status(&actor, &req.get_ref().name)
            .await)?;
        Ok(Response::new(conv::cluster_status(s)))
    }

    async fn get_fleet_status(
        &self,
        req: Request<pb::GetFleetStatusRequest>,
    ) -> Res<pb::FleetStatus> {
        let actor = api_actor(&self.service, &req).await?;
        let s = ok(self.service.fleet_summary(&actor).await)?;
        Ok(Response::new(conv::fleet_status(s)))
    }

    async fn list_audit(&self, req: Request<pb::ListAuditRequest>) -> Res<pb::ListAuditResponse> {
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

    async fn create_api_token(
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

    async fn list_api_tokens(
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

    async fn revoke_api_token(
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

    async fn list_sessions(
        &self,
        req: Request<pb::ListSessionsRequest>,
    ) -> Res<pb::ListSessionsResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let sessions = ok(self
            .service
            .list_sessions(&actor, conv::non_empty(&r.subject))
            .await)?;
        Ok(Response::new(pb::ListSessionsResponse {
            sessions: sessions.into_iter().map(conv::session).collect(),
        }))
    }

    async fn end_sessions(
        &self,
        req: Request<pb::EndSessionsRequest>,
    ) -> Res<pb::EndSessionsResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let body = fleetgate_api_types::EndSessions {
            subject: r.subject.clone(),
            issuer: conv::non_empty(&r.issuer).map(String::from),
            reason: conv::non_empty(&r.reason).map(String::from),
        };
        let done = ok(self.service.end_sessions(&actor, &body).await)?;
        Ok(Response::new(pb::EndSessionsResponse { ended: done.ended }))
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
