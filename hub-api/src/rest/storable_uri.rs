//! Refuses request URIs whose path parameters or query parameters hold text
//! PostgreSQL cannot store (U+0000, sent as `%00`): 400 naming the parameter.
//! A route layer over every route (REST, dashboard), so a new route or a
//! handler with its own extractor is covered without a check of its own.
//!
//! Query filters are refused too, not answered with an empty page: a NUL is
//! never part of a stored name, so refusing tells the caller about the typo
//! (or the injection attempt) instead of hiding it.

use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{RawPathParams, Request};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use fleetgate_policy::text;

use crate::Error;

/// The route layer (`middleware::from_fn(refuse_unstorable)`).
pub async fn refuse_unstorable(
    params: Result<RawPathParams, RawPathParamsRejection>,
    req: Request,
    next: Next,
) -> Response {
    match check(params.ok().as_ref(), req.uri()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

fn check(params: Option<&RawPathParams>, uri: &axum::http::Uri) -> Result<(), Error> {
    // Path parameters come percent-decoded; one that is not UTF-8 is left
    // to the handler's own extractor (400).
    for (name, value) in params.into_iter().flat_map(|p| p.iter()) {
        if !text::storable(value) {
            return Err(Error::bad_request(name, text::MESSAGE));
        }
    }
    // An unparsable query string is the handler's `Query` extractor's to refuse.
    if uri.query().is_some()
        && let Ok(axum::extract::Query(pairs)) =
            axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri)
    {
        for (name, value) in &pairs {
            if !text::storable(name) {
                return Err(Error::bad_request(
                    "query",
                    format!("a parameter name {}", text::MESSAGE),
                ));
            }
            if !text::storable(value) {
                return Err(Error::bad_request(name.as_str(), text::MESSAGE));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_name_the_parameter() {
        let uri: axum::http::Uri = "/api/v1/audit?limit=5&actor=a%00b".parse().unwrap();
        assert_eq!(check(None, &uri).unwrap_err().field(), Some("actor"));
        let uri: axum::http::Uri = "/api/v1/audit?a%00=1".parse().unwrap();
        assert_eq!(check(None, &uri).unwrap_err().field(), Some("query"));
        let uri: axum::http::Uri = "/api/v1/audit?actor=%E2%9C%93%01".parse().unwrap();
        assert!(check(None, &uri).is_ok());
    }
}
