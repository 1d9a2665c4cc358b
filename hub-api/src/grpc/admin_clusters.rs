//! `AdminService` cluster and status methods: registration, labels, tokens and
//! deletion of clusters, and the cluster and fleet status, over the same
//! service-layer methods REST calls.

use fleetgate_proto::v1 as pb;
use tonic::{Request, Response};

use super::admin::{AdminApi, Res, ok};
use super::admin_convert as conv;
use super::auth::api_actor;
use crate::service::types::{RegisterCluster, Relabel, SetClusterJwks};

/// A JWKS given as JSON text (empty: none); bad JSON is INVALID_ARGUMENT naming `field`.
fn jwks(field: &str, text: &str) -> Result<Option<serde_json::Value>, tonic::Status> {
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(text)
        .map(Some)
        .map_err(|e| tonic::Status::invalid_argument(format!("{field}: not JSON: {e}")))
}

impl AdminApi {
    pub(super) async fn clusters_register(
        &self,
        req: Request<pb::RegisterClusterRequest>,
    ) -> Res<pb::RegisterClusterResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let input = RegisterCluster {
            name: r.name,
            labels: r.labels.into_iter().collect(),
            issuer: conv::non_empty(&r.issuer).map(String::from),
            service_account: conv::non_empty(&r.service_account).map(String::from),
            spiffe_id: conv::non_empty(&r.spiffe_id).map(String::from),
            jwks: jwks("jwks_json", &r.jwks_json)?,
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

    pub(super) async fn clusters_list(
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

    pub(super) async fn clusters_get(
        &self,
        req: Request<pb::GetClusterRequest>,
    ) -> Res<pb::ClusterInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let c = ok(self.service.get_cluster(&actor, &req.get_ref().name).await)?;
        Ok(Response::new(conv::cluster(c)))
    }

    pub(super) async fn clusters_relabel(
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

    pub(super) async fn clusters_delete(
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

    pub(super) async fn clusters_rotate_token(
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

    pub(super) async fn clusters_set_jwks(
        &self,
        req: Request<pb::SetClusterJwksRequest>,
    ) -> Res<pb::ClusterInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let input = SetClusterJwks {
            jwks: jwks("jwks_json", &r.jwks_json)?,
        };
        let c = ok(self
            .service
            .set_cluster_jwks(&actor, &r.name, input, conv::non_empty(&r.reason))
            .await)?;
        Ok(Response::new(conv::cluster(c)))
    }

    pub(super) async fn clusters_status(
        &self,
        req: Request<pb::GetClusterStatusRequest>,
    ) -> Res<pb::ClusterStatus> {
        let actor = api_actor(&self.service, &req).await?;
        let s = ok(self
            .service
            .cluster_status(&actor, &req.get_ref().name)
            .await)?;
        Ok(Response::new(super::admin_status::cluster_status(s)))
    }

    pub(super) async fn fleet_status(
        &self,
        req: Request<pb::GetFleetStatusRequest>,
    ) -> Res<pb::FleetStatus> {
        let actor = api_actor(&self.service, &req).await?;
        let s = ok(self.service.fleet_summary(&actor).await)?;
        Ok(Response::new(super::admin_status::fleet_status(s)))
    }
}
