//! gRPC authentication: the bearer token from the `authorization` metadata,
//! checked through the service layer (the same checks REST uses). API tokens
//! (`fga_`) may call the admin API; spoke tokens (`fgs_`) only the spoke stream.

use tonic::{Request, Status};

use crate::auth::{SPOKE_TOKEN_PREFIX, bearer_token};
use crate::service::{Actor, Service};

use super::convert::to_status;

/// The bearer token of a request, or UNAUTHENTICATED.
pub fn bearer<T>(req: &Request<T>) -> Result<String, Status> {
    let value = req
        .metadata()
        .get("authorization")
        .ok_or_else(|| Status::unauthenticated("missing authorization: Bearer <token> metadata"))?;
    let value = value
        .to_str()
        .map_err(|_| Status::unauthenticated("authorization metadata is not ASCII"))?;
    bearer_token(value)
        .map(str::to_string)
        .ok_or_else(|| Status::unauthenticated("authorization must be 'Bearer <token>'"))
}

/// The API caller behind a request. Spoke tokens get PERMISSION_DENIED: they
/// are valid credentials, just not for this API.
pub async fn api_actor<T>(service: &Service, req: &Request<T>) -> Result<Actor, Status> {
    let token = bearer(req)?;
    if token.starts_with(SPOKE_TOKEN_PREFIX) {
        return Err(Status::permission_denied(
            "spoke tokens cannot call the admin API; use an API token (fga_...)",
        ));
    }
    service.authenticate_api(&token).await.map_err(to_status)
}
