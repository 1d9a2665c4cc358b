//! Rollouts: `GET /api/v1/gates/{name}/rollout` (status) and
//! `POST /api/v1/gates/{name}/rollout/{pause|resume|abort|release-next}` (operator).

use axum::Json;
use axum::extract::{Path, State};

use super::AppState;
use super::extract::{ApiActor, ApiOperator};
use crate::Result;
use crate::service::rollouts::{Command, RolloutStatus};

/// The gate's current rollout (else its latest): waves, each cluster's release and health
/// with the failing object's Ready message, soak countdown, estimated release times.
#[utoipa::path(get, path = "/api/v1/gates/{name}/rollout", tag = "rollouts",
    params(("name" = String, Path, description = "Gate name")),
    responses(
        (status = 200, description = "The rollout", body = RolloutStatus),
        (status = 404, description = "The gate has no rollout", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn status(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(gate): Path<String>,
) -> Result<Json<RolloutStatus>> {
    Ok(Json(s.service.rollout_status(&actor, &gate).await?))
}

/// Pause, resume, abort the gate's current rollout, or release its next wave now
/// (approve a wave waiting for approval, or end the current soak) — operator.
#[utoipa::path(post, path = "/api/v1/gates/{name}/rollout/{command}", tag = "rollouts",
    params(("name" = String, Path, description = "Gate name"),
           ("command" = String, Path, description = "pause, resume, abort or release-next")),
    responses(
        (status = 200, description = "The rollout after the command", body = RolloutStatus),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate or command", body = crate::error::ErrorBody),
        (status = 409, description = "The rollout's state does not allow it (named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn command(
    State(s): State<AppState>,
    ApiOperator(actor): ApiOperator,
    Path((gate, command)): Path<(String, String)>,
) -> Result<Json<RolloutStatus>> {
    let command: Command = command.parse()?;
    let (status, events) = s.service.rollout_command(&actor, &gate, command).await?;
    s.rollout_metrics.record(&events);
    Ok(Json(status))
}
