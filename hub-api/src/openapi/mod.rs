//! The OpenAPI 3 document of the REST API, generated from the handlers'
//! `#[utoipa::path]` annotations and the types' `ToSchema` derives, served at
//! `/api/v1/openapi.json`.

use std::sync::OnceLock;

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi};

use crate::dashboard::fleet_page::{FleetCounts, FleetGridPage, FleetGroup};
use crate::dashboard::views::{GateView, WhoAmI};

use crate::db::held_objects::{HeldObject, HeldObjectStatus};
use crate::db::reports::ReportedObject;
use crate::db::reports::{LocalGate, ReportProblem, ReportProblems};
use crate::error::{ErrorBody, ErrorDetail};
use crate::rollout::State as RolloutState;
use crate::rollout::health::Health;
use crate::schema::gate::{
    ApprovalDoc, ApproversDoc, CalendarAuthDoc, CalendarDoc, ClusterScopeDoc, EventMatchDoc,
    GateManifest, GateMetadata, GateSpecDoc, LabelSelectorDoc, LabelSelectorRequirementDoc,
    LocalRequestsDoc, SecretRefDoc, TargetsDoc, WindowDoc,
};
use crate::schema::pages::{AuditPage, ClusterPage, GatePage, OverridePage, TokenPage};
use crate::schema::preview::{
    PreviewDoc, PreviewStateDoc, RolloutEstimateDoc, TransitionDoc, WaveEstimateDoc,
};
use crate::service::fleet::{
    Cell, ClusterBrief, ClusterCounts, ClusterRollout, ClusterStatus, FleetGrid, FleetRow,
    FleetStatus, FleetSummary, GateBrief, GateStatus, GateSummary, ObjectCounts, ObjectStatus,
    ScopedCluster,
};
use crate::service::rollouts::{RolloutClusterStatus, RolloutStatus, WaveStatus};
use crate::service::types::{
    ApiToken, ApiTokenWithSecret, AuditEntry, Cluster, ClusterIdentity, ClusterWithToken,
    CreateToken, FieldWarning, GateRecord, OverrideClusters, OverrideRecord, OverrideRequest,
    RegisterCluster, Relabel, SetClusterJwks,
};
use crate::{dashboard, rest};
use fleetgate_api_types::{
    AuthConfig, EndMySessions, EndSessions, Identity, IdentityKind, LoginRequest, LoginStart,
    SessionList, SessionRecord, SessionsEnded,
};

/// Adds what operations share: the bearer scheme; the 408 (timeout) and 500
/// (internal) responses any route can give; 401 on every authenticated
/// route and 413/415 on every route with a body.
struct Common;

fn error_response(description: &str) -> utoipa::openapi::Response {
    ResponseBuilder::new()
        .description(description)
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build()
}

impl Modify for Common {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let ops = [
                &mut item.get,
                &mut item.put,
                &mut item.post,
                &mut item.delete,
                &mut item.patch,
            ];
            for op in ops.into_iter().flatten() {
                let authenticated = op.security.as_ref().is_some_and(|s| !s.is_empty());
                let has_body = op.request_body.is_some();
                let responses = &mut op.responses.responses;
                let mut common = vec![
                    ("408", "Request took longer than the timeout"),
                    ("500", "Internal error (details in the hub's log)"),
                ];
                if authenticated {
                    common.push(("401", "Missing, unknown or revoked token"));
                }
                if has_body {
                    common.push(("413", "Body larger than the limit"));
                    common.push(("415", "Body neither JSON nor YAML"));
                }
                for (code, text) in common {
                    responses
                        .entry(code.to_string())
                        .or_insert_with(|| error_response(text).into());
                }
            }
        }
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "API token (`fga_...`), or a JWT of a trusted issuer (the login \
                         provider's ID token, a CI job's or service account's token). The \
                         dashboard's session cookie works too; its writes send X-CSRF-Token. \
                         Roles: viewer (read), operator (+ overrides), admin (everything, \
                         incl. tokens).",
                    ))
                    .build(),
            ),
        );
    }
}

/// The API description.
#[derive(OpenApi)]
#[openapi(
    info(title = "fleetgate hub REST API", version = "v1",
        description = "Gates, overrides, clusters, status, audit and API tokens of a fleetgate hub. \
            Errors are `{\"error\": {\"code\", \"message\", \"field\"}}`."),
    paths(
        rest::gates::list, rest::gates::get, rest::gates::create, rest::gates::replace,
        rest::gates::delete, rest::gates::preview,
        rest::overrides::open, rest::overrides::close, rest::overrides::list,
        rest::overrides::cancel,
        rest::rollouts::status, rest::rollouts::command,
        rest::clusters::list, rest::clusters::get, rest::clusters::register,
        rest::clusters::relabel, rest::clusters::delete, rest::clusters::rotate_token,
        rest::clusters::set_jwks,
        rest::status::cluster, rest::status::fleet, rest::status::clusters,
        rest::audit::list,
        rest::tokens::list, rest::tokens::create, rest::tokens::revoke,
        rest::access_policies::list, rest::access_policies::get,
        rest::access_policies::apply, rest::access_policies::delete,
        rest::health::healthz, rest::health::readyz, rest::health::metrics, rest::health::version,
        dashboard::views::whoami, dashboard::views::fleet, dashboard::views::gate,
        dashboard::events::stream,
        rest::webhooks::list, rest::webhooks::create, rest::webhooks::get, rest::webhooks::replace,
        rest::webhooks::delete, rest::webhooks::rotate_secret, rest::webhooks::test,
        rest::webhooks::deliveries, rest::webhooks::delivery, rest::webhooks::redeliver,
        rest::webhooks::enable, rest::webhooks::disable,
        rest::sign_in::config, rest::sign_in::login, rest::sign_in::logout,
        rest::sign_in::list, rest::sign_in::end,
        rest::freezes::freeze, rest::freezes::list, rest::freezes::unfreeze,
        rest::approvals::list, rest::approvals::get, rest::approvals::approve,
        rest::approvals::reject, rest::approvals::cancel,
        rest::admission_webhooks::list, rest::admission_webhooks::get,
        rest::admission_webhooks::apply, rest::admission_webhooks::delete,
        rest::sign_in::mine, rest::sign_in::end_mine,
    ),
    components(schemas(
        ErrorBody, ErrorDetail, GateRecord, FieldWarning, Cluster, ClusterWithToken, RegisterCluster, Relabel,
        ClusterIdentity, SetClusterJwks,
        OverrideClusters, OverrideRequest, OverrideRecord, AuditEntry, ApiToken,
        ApiTokenWithSecret, CreateToken, ClusterStatus, GateStatus, ClusterRollout, ObjectStatus, ReportedObject, ReportProblems, ReportProblem, ObjectCounts,
        FleetSummary, GateSummary, ClusterCounts, GatePage, ClusterPage, OverridePage, AuditPage,
        TokenPage, PreviewDoc, PreviewStateDoc, TransitionDoc, RolloutEstimateDoc, WaveEstimateDoc, GateManifest, GateMetadata,
        GateSpecDoc, ClusterScopeDoc, TargetsDoc, LabelSelectorDoc, LabelSelectorRequirementDoc,
        WindowDoc, LocalRequestsDoc, ApprovalDoc, ApproversDoc, CalendarDoc, CalendarAuthDoc, SecretRefDoc, EventMatchDoc,
        WhoAmI, FleetGrid, FleetGridPage, FleetCounts, FleetGroup, FleetRow, Cell, GateView, ScopedCluster, FleetStatus, ClusterBrief,
        GateBrief, HeldObject, HeldObjectStatus, LocalGate,
        RolloutStatus, WaveStatus, RolloutClusterStatus, RolloutState, Health,
        fleetgate_api_types::webhooks::Webhook, fleetgate_api_types::webhooks::WebhookSpec,
        fleetgate_api_types::webhooks::WebhookFormat, fleetgate_api_types::webhooks::WebhookWithSecret,
        fleetgate_api_types::webhooks::RotateWebhookSecret, fleetgate_api_types::webhooks::WebhookDelivery,
        fleetgate_api_types::webhooks::WebhookAttempt, fleetgate_api_types::webhooks::WebhookTestResult,
        Identity, IdentityKind, SessionRecord, SessionList, EndSessions, SessionsEnded, EndMySessions,
        AuthConfig, LoginRequest, LoginStart,
        fleetgate_api_types::AccessPolicy, fleetgate_api_types::AccessPolicySpec,
        fleetgate_api_types::AccessPolicyRecord, crate::schema::pages::AccessPolicyPage, fleetgate_api_types::Subjects,
        fleetgate_api_types::WorkloadSubject, fleetgate_api_types::AccessScope,
        fleetgate_api_types::GateScope,
        fleetgate_api_types::FreezeRequest, fleetgate_api_types::UnfreezeRequest,
        fleetgate_api_types::FreezeRecord,
        fleetgate_api_types::impact::GateImpact, fleetgate_api_types::impact::ClusterImpact,
        fleetgate_api_types::impact::ImpactCounts, fleetgate_api_types::impact::ImpactTransition, fleetgate_api_types::impact::ImpactWave,
        fleetgate_api_types::impact::ObjectRef, fleetgate_api_types::impact::InventoryObject,
        fleetgate_api_types::ApprovalRequest, fleetgate_api_types::ApprovalEntry,
        fleetgate_api_types::ApprovalDecision, fleetgate_api_types::OverrideOutcome,
        crate::schema::pages::ApprovalPage,
        fleetgate_api_types::admission::AdmissionWebhook,
        fleetgate_api_types::admission::AdmissionWebhookSpec,
        fleetgate_api_types::admission::FailurePolicy,
        fleetgate_api_types::admission::AdmissionRequest,
        fleetgate_api_types::admission::AdmissionResponse,
        fleetgate_api_types::admission::AdmissionOutcome,
        fleetgate_api_types::status::RolloutFailure,
        fleetgate_api_types::status::ClusterRolloutFailure,
    )),
    modifiers(&Common),
    tags(
        (name = "gates", description = "Gate manifests"),
        (name = "overrides", description = "Manual open/close with expiry"),
        (name = "rollouts", description = "Rollout waves: status, pause, resume, abort, release-next"),
        (name = "clusters", description = "Registered clusters and spoke tokens"),
        (name = "status", description = "Gate state per cluster and fleet summary"),
        (name = "audit", description = "The append-only audit log"),
        (name = "tokens", description = "API tokens (admin only)"),
        (name = "access", description = "Access policies: who may do what, where (unscoped admins only)"),
        (name = "health", description = "Health, readiness and metrics"),
        (name = "dashboard", description = "Who am I, the dashboard's views and the live event stream"),
        (name = "webhooks", description = "Notification subscriptions, deliveries and attempts (admin only)"),
        (name = "identity", description = "Signing in through the OpenID provider; sessions"),
        (name = "freezes", description = "Fleet freezes (the emergency stop): freeze, list, unfreeze"),
        (name = "approvals", description = "Override requests waiting for a second person (gates with spec.approval)"),
    )
)]
pub struct ApiDoc;

/// The document (built once).
pub fn document() -> &'static utoipa::openapi::OpenApi {
    static DOC: OnceLock<utoipa::openapi::OpenApi> = OnceLock::new();
    DOC.get_or_init(ApiDoc::openapi)
}

/// `GET /api/v1/openapi.json` (no authentication).
pub async fn serve_openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(document().clone())
}
