//! The budgets of identity provider answers, against a real local HTTP server standing in for
//! a provider (discovery document, JWKS, token endpoint):
//! - a JWKS over `JWKS_MAX_BYTES` does not replace the cached keys (the key fetched before
//!   still verifies, the new one is not taken), and the failure is counted; one within the
//!   budget does replace them (before the budget, the shared 1 MiB cap let the large one in);
//! - a discovery document over `DISCOVERY_MAX_BYTES` finds no keys: the cached ones stay;
//! - a JWKS whose body trickles past `IDENTITY_ANSWER_MAX_TIME` (under the 15 s egress
//!   timeout) does not replace the cached keys;
//! - a token endpoint answer over `TOKEN_ANSWER_MAX_BYTES` fails with the budget named;
//! - an answer is read no further than its budget: a JWKS that sends one byte past
//!   `JWKS_MAX_BYTES` and then stalls is refused as over its budget at once (before, the
//!   body was read up to the shared 1 MiB egress cap, so this one ran into the time budget).

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::header;
use axum::response::Response;
use axum::routing::{get, post};
use fleetgate_hub::egress::EgressPolicy;
use fleetgate_hub::identity::keys::KeyCache;
use fleetgate_hub::identity::metrics::{IdentityMetrics, OutcomeLabels};
use fleetgate_hub::identity::outbound::{AnswerBudget, Outbound};
use fleetgate_policy::budgets::{
    DISCOVERY_MAX_BYTES, IDENTITY_ANSWER_MAX_TIME, JWKS_MAX_BYTES, TOKEN_ANSWER_MAX_BYTES,
};
use futures::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// What the provider serves now.
struct Provider {
    issuer: String,
    discovery: Mutex<Value>,
    jwks: Mutex<Value>,
    /// Send the JWKS 64 bytes at a time, this long apart.
    trickle: Mutex<Option<Duration>>,
}

fn json_response(body: Vec<u8>) -> Response {
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body))
        .unwrap()
}

async fn discovery(State(p): State<Arc<Provider>>) -> Response {
    json_response(p.discovery.lock().await.to_string().into_bytes())
}

async fn jwks(State(p): State<Arc<Provider>>) -> Response {
    let body = p.jwks.lock().await.to_string().into_bytes();
    let Some(gap) = *p.trickle.lock().await else {
        return json_response(body);
    };
    let chunks: Vec<Vec<u8>> = body.chunks(64).map(<[u8]>::to_vec).collect();
    let stream = futures::stream::unfold(chunks.into_iter(), move |mut rest| async move {
        let chunk = rest.next()?;
        tokio::time::sleep(gap).await;
        Some((Ok::<_, std::io::Error>(chunk), rest))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// `JWKS_MAX_BYTES + 1` bytes of a JSON document, then nothing more: the body never ends.
async fn stalled() -> Response {
    let head = vec![b' '; JWKS_MAX_BYTES + 1];
    let stream = futures::stream::once(async move { Ok::<_, std::io::Error>(head) })
        .chain(futures::stream::pending());
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// A token answer of `TOKEN_ANSWER_MAX_BYTES + 1` bytes.
async fn token() -> Response {
    let shell = json!({"access_token": "", "token_type": "Bearer"}).to_string();
    let pad = "a".repeat(TOKEN_ANSWER_MAX_BYTES + 1 - shell.len());
    json_response(
        json!({"access_token": pad, "token_type": "Bearer"})
            .to_string()
            .into_bytes(),
    )
}

/// An Ed25519 signature key with `kid` (its `x` made from `seed`).
fn key(kid: &str, seed: u8) -> Value {
    use base64::Engine as _;
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([seed; 32]);
    json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"})
}

/// `{"keys": [key(kid)]}`, padded with other keys past `at_least` bytes when given.
fn key_set(kid: &str, at_least: Option<usize>) -> Value {
    let mut keys = vec![key(kid, 1)];
    let mut n = 0;
    while at_least.is_some_and(|min| json!({"keys": keys}).to_string().len() <= min) {
        keys.push(key(&format!("padding-{n}"), 2));
        n += 1;
    }
    json!({"keys": keys})
}

async fn provider() -> Arc<Provider> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let p = Arc::new(Provider {
        discovery: Mutex::new(json!({"issuer": issuer, "jwks_uri": format!("{issuer}/jwks")})),
        jwks: Mutex::new(key_set("k1", None)),
        trickle: Mutex::new(None),
        issuer,
    });
    let app = Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/token", post(token))
        .route("/stalled", get(stalled))
        .with_state(p.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    p
}

fn outbound() -> Outbound {
    Outbound::new(EgressPolicy::default().allow_private(true).allow_http(true)).unwrap()
}

/// A cache that fetches on every refresh, reading the provider's discovery document.
fn cache(p: &Provider, metrics: &IdentityMetrics) -> KeyCache {
    KeyCache::new(
        p.issuer.clone(),
        None,
        Duration::ZERO,
        outbound(),
        metrics.clone(),
    )
}

fn kids(cache: &KeyCache) -> Vec<String> {
    let mut kids: Vec<String> = cache.current().by_kid.keys().cloned().collect();
    kids.sort();
    kids
}

fn fetches(m: &IdentityMetrics, outcome: &str) -> u64 {
    m.jwks
        .get_or_create(&OutcomeLabels {
            outcome: outcome.into(),
        })
        .get()
}

#[tokio::test]
async fn oversize_jwks_and_discovery_keep_the_cached_keys() {
    fleetgate_hub::identity::crypto::install();
    let p = provider().await;
    let metrics = IdentityMetrics::default();
    let cache = cache(&p, &metrics);
    cache.refresh().await;
    assert_eq!(kids(&cache), ["k1"]);

    // A JWKS one key past the budget: refused, the cached key stays.
    *p.jwks.lock().await = key_set("k2", Some(JWKS_MAX_BYTES));
    assert!(p.jwks.lock().await.to_string().len() > JWKS_MAX_BYTES);
    cache.refresh().await;
    assert_eq!(kids(&cache), ["k1"], "an oversize JWKS replaced the keys");
    assert_eq!(fetches(&metrics, "error"), 1);

    // A discovery document past its budget: no keys found, the cached ones stay.
    *p.jwks.lock().await = key_set("k2", None);
    let mut padded = p.discovery.lock().await.clone();
    padded["x_padding"] = json!("p".repeat(DISCOVERY_MAX_BYTES));
    *p.discovery.lock().await = padded;
    cache.refresh().await;
    assert_eq!(
        kids(&cache),
        ["k1"],
        "keys found through an oversize discovery document"
    );
    assert_eq!(fetches(&metrics, "error"), 2);

    // Both within their budgets: the keys are replaced.
    p.discovery.lock().await["x_padding"] = json!("");
    cache.refresh().await;
    assert_eq!(kids(&cache), ["k2"]);
    assert_eq!(fetches(&metrics, "ok"), 2);
}

#[tokio::test]
async fn a_jwks_slower_than_its_time_budget_keeps_the_cached_keys() {
    fleetgate_hub::identity::crypto::install();
    let p = provider().await;
    let metrics = IdentityMetrics::default();
    let cache = cache(&p, &metrics);
    cache.refresh().await;
    assert_eq!(kids(&cache), ["k1"]);
    // The new key set arrives in about 12 s: past the 10 s budget, within the 15 s egress
    // timeout every other outbound call has.
    let slow = key_set("k2", None);
    let chunks = slow.to_string().len().div_ceil(64) as u32;
    let gap = (IDENTITY_ANSWER_MAX_TIME + Duration::from_secs(2)) / chunks;
    assert!(EgressPolicy::default().timeout > IDENTITY_ANSWER_MAX_TIME + Duration::from_secs(2));
    *p.jwks.lock().await = slow;
    *p.trickle.lock().await = Some(gap);
    cache.refresh().await;
    assert_eq!(
        kids(&cache),
        ["k1"],
        "a JWKS past its time budget replaced the keys"
    );
    assert_eq!(fetches(&metrics, "error"), 1);
}

#[tokio::test]
async fn an_oversize_token_answer_fails_naming_the_budget() {
    let p = provider().await;
    let err = outbound()
        .post_form::<Value>(
            &format!("{}/token", p.issuer),
            &[("grant_type", "authorization_code")],
            None,
            AnswerBudget::TOKEN,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "larger than the budget of {TOKEN_ANSWER_MAX_BYTES} bytes for a token endpoint answer"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn an_answer_is_read_no_further_than_its_budget() {
    let p = provider().await;
    let err = tokio::time::timeout(
        IDENTITY_ANSWER_MAX_TIME + Duration::from_secs(5),
        outbound().get_json::<Value>(&format!("{}/stalled", p.issuer), AnswerBudget::JWKS),
    )
    .await
    .expect("the call ends within its time budget")
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(&format!(
            "larger than the budget of {JWKS_MAX_BYTES} bytes for a JWKS"
        )),
        "refused for another reason (read on past the budget?): {err}"
    );
}
