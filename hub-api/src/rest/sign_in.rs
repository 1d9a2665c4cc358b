//! Signing in through the OpenID provider and managing sessions:
//! `GET /api/v1/auth/config` (how to sign in; no token needed),
//! `POST /api/v1/auth/login` (start: the provider URL, and a login cookie
//! binding the callback to this browser), `GET /auth/callback` (the
//! provider sends the browser back here: session cookie, then the
//! dashboard), `POST /api/v1/auth/logout`; a person's own sessions
//! (`GET /api/v1/auth/sessions`, `POST /api/v1/auth/sessions/end`), and for
//! admins `GET /api/v1/sessions` and `POST /api/v1/sessions/end`.

use axum::Json;
use axum::extract::State;
use axum::http::header::{LOCATION, SET_COOKIE, USER_AGENT};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use fleetgate_api_types::{
    AuthConfig, EndMySessions, EndSessions, LoginRequest, LoginStart, SessionList, SessionsEnded,
};
use serde::Deserialize;

use super::extract::{ApiAdmin, Body, Caller, Query, cookie};
use super::state::AppState;
use crate::Result;
use crate::identity::sessions::{LOGIN_COOKIE, SESSION_COOKIE};

/// How to sign in: the provider, and the CLI's client.
#[utoipa::path(get, path = "/api/v1/auth/config", tag = "identity",
    responses((status = 200, description = "Sign-in settings", body = AuthConfig)))]
pub async fn config(State(s): State<AppState>, headers: HeaderMap) -> Json<AuthConfig> {
    let login = s.service.identities().login.as_deref().map(|l| l.config());
    Json(AuthConfig {
        session_cookie: cookie(&headers, SESSION_COOKIE).is_some(),
        enabled: login.is_some(),
        provider: login.map(|l| l.display_name.clone()),
        issuer: login.map(|l| l.issuer.clone()),
        cli_client_id: login.map(|l| l.cli_client().to_string()),
        cli_scopes: login.map(|l| l.scope_list()).unwrap_or_default(),
    })
}

/// Start signing in: answers the provider's authorization URL and sets the
/// login cookie; the dashboard then navigates there.
#[utoipa::path(post, path = "/api/v1/auth/login", tag = "identity",
    request_body = LoginRequest,
    responses(
        (status = 200, description = "Go to `url`", body = LoginStart),
        (status = 404, description = "No login provider configured", body = crate::error::ErrorBody),
        (status = 502, description = "The provider cannot be reached", body = crate::error::ErrorBody),
    ))]
pub async fn login(State(s): State<AppState>, body: Body) -> Result<Response> {
    let req: LoginRequest = if body.text.trim().is_empty() {
        LoginRequest::default()
    } else {
        body.parse()?
    };
    let (url, state) = s
        .service
        .begin_login(req.return_to.as_deref().unwrap_or("/"))
        .await?;
    let mut res = Json(LoginStart { url }).into_response();
    let cookie = cookie_header(&s, LOGIN_COOKIE, &state, Some(600));
    res.headers_mut().append(SET_COOKIE, cookie);
    Ok(res)
}

/// The provider's redirect back.
#[derive(Debug, Deserialize)]
pub struct Callback {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
    error_description: Option<String>,
}

/// The redirect URI: completes the sign-in and sends the browser to the
/// dashboard with its session cookie, or to the sign-in page with the reason.
pub async fn callback(
    State(s): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<Callback>,
) -> Response {
    let result = match (&q.error, &q.code, &q.state) {
        (Some(e), _, _) => Err(s
            .service
            .login_refused_by_provider(e, q.error_description.as_deref())
            .await),
        (None, Some(code), Some(state)) => {
            s.service
                .finish_login(
                    code,
                    state,
                    cookie(&headers, LOGIN_COOKIE).as_deref(),
                    headers.get(USER_AGENT).and_then(|v| v.to_str().ok()),
                )
                .await
        }
        _ => Err(s.service.login_callback_malformed().await),
    };
    let mut res = StatusCode::SEE_OTHER.into_response();
    let h = res.headers_mut();
    h.append(SET_COOKIE, cookie_header(&s, LOGIN_COOKIE, "", Some(0)));
    let to = match result {
        Ok(done) => {
            let max_age = None; // a browser-session cookie; the hub decides expiry
            h.append(
                SET_COOKIE,
                cookie_header(&s, SESSION_COOKIE, &done.secret, max_age),
            );
            done.return_to
        }
        Err(e) => {
            tracing::info!(error = %e, "sign-in failed");
            format!(
                "/?signin_error={}",
                fleetgate_hub_adapters::identity::outbound::enc(&e.public_message())
            )
        }
    };
    if let Ok(v) = HeaderValue::from_str(&to) {
        h.insert(LOCATION, v);
    }
    res
}

/// Sign out: ends the session of the presented cookie (a write: it needs
/// the CSRF token) and clears the cookie.
#[utoipa::path(post, path = "/api/v1/auth/logout", tag = "identity",
    responses(
        (status = 204, description = "Signed out"),
        (status = 401, description = "No session", body = crate::error::ErrorBody),
        (status = 403, description = "Missing X-CSRF-Token", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn logout(
    State(s): State<AppState>,
    headers: HeaderMap,
    Caller(_who): Caller,
) -> Result<Response> {
    if let Some(secret) = cookie(&headers, SESSION_COOKIE) {
        s.service.logout(&secret).await?;
    }
    let mut res = StatusCode::NO_CONTENT.into_response();
    res.headers_mut()
        .append(SET_COOKIE, cookie_header(&s, SESSION_COOKIE, "", Some(0)));
    Ok(res)
}

/// `?subject=` of the session list.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SessionQuery {
    /// Only this person's sessions (subject or email).
    pub subject: Option<String>,
}

/// Live dashboard sessions (admin).
#[utoipa::path(get, path = "/api/v1/sessions", tag = "identity", params(SessionQuery),
    responses(
        (status = 200, description = "Live sessions, newest first", body = SessionList),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    Caller(who): Caller,
    Query(q): Query<SessionQuery>,
) -> Result<Json<SessionList>> {
    let items = s
        .service
        .list_sessions(&who.actor, who.session, q.subject.as_deref())
        .await?;
    Ok(Json(SessionList { items }))
}

/// End every session of a person (admin): their next request needs a new
/// sign-in.
#[utoipa::path(post, path = "/api/v1/sessions/end", tag = "identity",
    request_body = EndSessions,
    responses(
        (status = 200, description = "How many sessions ended", body = SessionsEnded),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid subject (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn end(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    body: Body,
) -> Result<Json<SessionsEnded>> {
    let req: EndSessions = body.parse()?;
    Ok(Json(s.service.end_sessions(&actor, &req).await?))
}

/// The caller's own live sessions (a signed-in person: dashboard session or
/// the provider's JWT); `current` marks the one this request came with.
#[utoipa::path(get, path = "/api/v1/auth/sessions", tag = "identity",
    responses(
        (status = 200, description = "Your live sessions, newest first", body = SessionList),
        (status = 401, description = "Not signed in", body = crate::error::ErrorBody),
        (status = 403, description = "Not a person (an API token or workload has no sessions)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn mine(State(s): State<AppState>, Caller(who): Caller) -> Result<Json<SessionList>> {
    let items = s.service.my_sessions(&who.actor, who.session).await?;
    Ok(Json(SessionList { items }))
}

/// End your own sessions: the one `id` names, else all of them
/// (`keepCurrent`: all but this one, "sign out everywhere else").
#[utoipa::path(post, path = "/api/v1/auth/sessions/end", tag = "identity",
    request_body = EndMySessions,
    responses(
        (status = 200, description = "How many sessions ended", body = SessionsEnded),
        (status = 401, description = "Not signed in", body = crate::error::ErrorBody),
        (status = 403, description = "Not a person, or missing X-CSRF-Token", body = crate::error::ErrorBody),
        (status = 404, description = "`id` is not one of your live sessions", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn end_mine(
    State(s): State<AppState>,
    Caller(who): Caller,
    body: Body,
) -> Result<Json<SessionsEnded>> {
    let req: EndMySessions = if body.text.trim().is_empty() {
        EndMySessions::default()
    } else {
        body.parse()?
    };
    let done = s
        .service
        .end_my_sessions(&who.actor, who.session, &req)
        .await?;
    Ok(Json(done))
}

/// A `Set-Cookie` value: HttpOnly, SameSite=Lax (the provider's redirect
/// back is a cross-site navigation), Secure when the hub is served over
/// https (its redirect URI says so) or `secureCookies` says so, whole-site
/// path.
fn cookie_header(s: &AppState, name: &str, value: &str, max_age: Option<u32>) -> HeaderValue {
    let secure = s
        .service
        .identities()
        .login
        .as_deref()
        .is_some_and(|l| l.config().secure_cookies());
    let mut c = format!("{name}={value}; Path=/; HttpOnly; SameSite=Lax");
    if secure {
        c.push_str("; Secure");
    }
    if let Some(age) = max_age {
        c.push_str(&format!("; Max-Age={age}"));
    }
    HeaderValue::from_str(&c).expect("cookie values are base64url")
}
