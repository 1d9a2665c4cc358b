//! Notifications: a webhook subscription (`demo-receiver`, every event) to a
//! small receiver the demo runs itself on loopback. The hub refuses outbound
//! calls to loopback and private addresses, and plain http, unless allowed:
//! the demo starts it with `--webhook-allow-private --webhook-allow-http`
//! (link-local stays refused) and says so. Once ready, the demo prints each
//! message the receiver gets, so approving a request or opening a gate shows
//! its notifications in the demo's terminal.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use fleetgate_api_types::webhooks::{WebhookDelivery, WebhookWithSecret};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::other;
use fleetgate::client::{Client, seg};
use fleetgate::error::{Error, Result};

/// The demo's subscription.
pub const NAME: &str = "demo-receiver";

/// What the receiver got: one `type subject` line per message.
#[derive(Default)]
struct Received {
    lines: Mutex<Vec<String>>,
    /// Print each message as it comes (once the demo is ready).
    live: AtomicBool,
}

/// The running receiver.
pub struct Receiver {
    pub url: String,
    received: Arc<Received>,
}

impl Receiver {
    /// How many messages it got so far.
    pub fn count(&self) -> usize {
        self.received
            .lines
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .len()
    }

    /// From now on, print every message it gets.
    pub fn go_live(&self) {
        self.received.live.store(true, Ordering::SeqCst);
    }
}

async fn hook(State(r): State<Arc<Received>>, headers: HeaderMap, body: String) -> StatusCode {
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let id = headers
        .get("webhook-id")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("?");
    let line = format!(
        "{} {} ({id})",
        v["type"].as_str().unwrap_or("?"),
        v["subject"].as_str().unwrap_or("?")
    );
    if r.live.load(Ordering::SeqCst) {
        println!("webhook → {NAME}: {line}");
    }
    r.lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
    StatusCode::NO_CONTENT
}

/// Starts the receiver on loopback until `stop`.
pub async fn serve(stop: &CancellationToken) -> Result<Receiver> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| other("webhook receiver", e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| other("webhook receiver", e))?;
    let received = Arc::new(Received::default());
    let app = Router::new()
        .route("/hooks/fleetgate", post(hook))
        .with_state(received.clone());
    let stop = stop.clone();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move { stop.cancelled().await })
            .await;
    });
    Ok(Receiver {
        url: format!("http://{addr}/hooks/fleetgate"),
        received,
    })
}

/// Subscribes the receiver to every event (on a reused database the old subscription, which
/// names an old port, is replaced).
pub async fn subscribe(client: &Client, receiver: &Receiver) -> Result<()> {
    let spec = json!({
        "name": NAME,
        "url": receiver.url,
        "description": "the demo's own receiver on loopback",
    });
    match client
        .post::<_, WebhookWithSecret>("/webhooks", &[], &spec)
        .await
    {
        Ok(_) => Ok(()),
        Err(Error::Api { status: 409, .. }) => {
            let _: Value = client
                .put(&format!("/webhooks/{}", seg(NAME)), &[], &spec, None)
                .await?;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Waits (at most `limit`) until the hub delivered at least one message to the receiver;
/// returns the subscription's deliveries as the hub lists them then.
pub async fn wait_delivered(
    client: &Client,
    receiver: &Receiver,
    limit: Duration,
) -> Result<Vec<WebhookDelivery>> {
    let deadline = Instant::now() + limit;
    while receiver.count() == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    client
        .get::<Vec<WebhookDelivery>>(
            &format!("/webhooks/{}/deliveries", seg(NAME)),
            &[("limit", "100".to_string())],
        )
        .await
}

/// The demo's line about the subscription.
pub fn describe(receiver: &Receiver, deliveries: &[WebhookDelivery]) -> String {
    let delivered = deliveries.iter().filter(|d| d.state == "delivered").count();
    let mut types: Vec<&str> = deliveries.iter().map(|d| d.event_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    format!(
        "subscription {NAME} posts every event to the demo's receiver at {}: {} deliveries \
         listed ({delivered} delivered, {} received: {})\n    \
         (the hub calls loopback over plain http only because the demo starts it with \
         --webhook-allow-private --webhook-allow-http)",
        receiver.url,
        deliveries.len(),
        receiver.count(),
        if types.is_empty() {
            "none yet".to_string()
        } else {
            types.join(", ")
        }
    )
}
