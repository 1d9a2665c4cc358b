//! Forwards the spoke's events to Flux's notification-controller (`--events-addr`), so a Flux
//! `Alert` on Kustomizations or HelmReleases routes fleetgate's `GateClosed`, `GateOpened`,
//! `ObjectsHeld`, `ObjectsReleased` and request events through the cluster's own `Provider`s,
//! with no hub involved (it works offline from the hub).
//!
//! The payload follows fluxcd/pkg exactly as Flux controllers send it:
//! - `apis/event/v1beta1/event.go` (`eventv1.Event`): `involvedObject` (a
//!   `corev1.ObjectReference`), `severity` (`info` or `error`), `timestamp` (`metav1.Time`,
//!   RFC 3339 in seconds), `message`, `reason`, `metadata`, `reportingController`, and
//!   `reportingInstance`;
//! - `runtime/events/recorder.go` (`Recorder.AnnotatedEventf`): POSTs that JSON as
//!   `application/json` to the address, a Warning event as severity `error`, anything else as
//!   `info`, with a 5 s timeout, retrying connection errors and 5xx answers (go-retryablehttp's
//!   defaults: 4 retries from 1 s), never a 429 (notification-controller's answer to a
//!   duplicate within its rate-limit window);
//! - `apis/event/v1beta1/metadata.go`: the `revision` and `token` keys. notification-controller
//!   (`internal/server/event_server.go` `cleanupMetadata`) forwards only metadata keys prefixed
//!   with the involved object's API group (or `event.toolkit.fluxcd.io/`), and uses
//!   `<group>/revision` and `<group>/token` in its duplicate key (`eventKeyFunc`); it drops the
//!   token before alerting (`event_handlers.go` `excludeInternalMetadata`). So every key here is
//!   `<group>/…`: `revision` (the object's last applied revision, when known), `token` (this
//!   occurrence: a retry of the same POST is a duplicate, a later suspend is not) and
//!   `fleetgate` (the event's reason, shown by providers as a field).
//!
//! As the recorder, only events about namespaced objects go (it refuses an object without a
//! namespace): the cluster-scoped Gate objects' events stay Kubernetes Events.
//!
//! Events queue (bounded) to one sender task, so reconciling never waits on the network and
//! events reach the receiver in order; a full queue drops the newest event and counts it.

use std::time::Duration;

use chrono::{DateTime, SecondsFormat, Utc};
use k8s_openapi::api::core::v1::ObjectReference;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use serde::Serialize;
use tokio::sync::mpsc;

/// notification-controller's limit on a message (eventv1.Event `Message`, MaxLength 39000).
pub const MESSAGE_LIMIT: usize = 39_000;
/// Events waiting to be sent; more are dropped (and counted).
const QUEUE: usize = 1024;
/// go-retryablehttp's defaults as fluxcd/pkg's recorder uses them.
const TIMEOUT: Duration = Duration::from_secs(5);
const RETRIES: u32 = 4;
const WAIT_MIN: Duration = Duration::from_secs(1);
const WAIT_MAX: Duration = Duration::from_secs(30);

/// `eventv1.Event` as JSON (fluxcd/pkg `apis/event/v1beta1/event.go`).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FluxEvent {
    pub involved_object: ObjectReference,
    pub severity: &'static str,
    pub timestamp: String,
    pub message: String,
    pub reason: String,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub metadata: std::collections::BTreeMap<String, String>,
    pub reporting_controller: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reporting_instance: String,
}

/// The API group of `api_version` (`kustomize.toolkit.fluxcd.io/v1` →
/// `kustomize.toolkit.fluxcd.io`; the core group is empty).
pub fn api_group(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

/// Builds the event for one publish.
#[allow(clippy::too_many_arguments)]
pub fn event(
    warning: bool,
    reason: &str,
    message: &str,
    regarding: &ObjectReference,
    revision: Option<&str>,
    at: DateTime<Utc>,
    controller: &str,
    instance: &str,
) -> FluxEvent {
    let group = api_group(regarding.api_version.as_deref().unwrap_or_default());
    let key = |k: &str| {
        if group.is_empty() {
            k.to_string()
        } else {
            format!("{group}/{k}")
        }
    };
    let mut metadata = std::collections::BTreeMap::new();
    if let Some(r) = revision.filter(|r| !r.is_empty()) {
        metadata.insert(key("revision"), r.to_string());
    }
    let timestamp = at.to_rfc3339_opts(SecondsFormat::Secs, true);
    metadata.insert(
        key("token"),
        format!(
            "fleetgate/{reason}/{}",
            at.to_rfc3339_opts(SecondsFormat::Nanos, true)
        ),
    );
    metadata.insert(key("fleetgate"), reason.to_string());
    FluxEvent {
        involved_object: regarding.clone(),
        severity: if warning { "error" } else { "info" },
        timestamp,
        message: super::text::fit_text(message, MESSAGE_LIMIT),
        reason: reason.to_string(),
        metadata,
        reporting_controller: controller.to_string(),
        reporting_instance: instance.to_string(),
    }
}

/// The queue to the sender task.
#[derive(Debug, Clone)]
pub struct FluxEvents {
    tx: mpsc::Sender<FluxEvent>,
    sent: Family<Vec<(String, String)>, Counter>,
}

impl FluxEvents {
    /// Starts the sender for `addr` (needs a Tokio runtime). `sent` counts outcomes
    /// (`delivered`, `duplicate`, `refused`, `failed`, `dropped`).
    pub fn start(addr: &str, sent: Family<Vec<(String, String)>, Counter>) -> Result<Self, String> {
        let url = reqwest::Url::parse(addr).map_err(|e| format!("--events-addr {addr}: {e}"))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("--events-addr {addr}: not an http(s) URL"));
        }
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let (tx, rx) = mpsc::channel(QUEUE);
        tokio::spawn(send_all(client, url, rx, sent.clone()));
        Ok(Self { tx, sent })
    }

    /// Queues `event`; never waits.
    pub fn send(&self, event: FluxEvent) {
        if self.tx.try_send(event).is_err() {
            self.count("dropped");
            tracing::warn!("notification-controller event queue full: event dropped");
        }
    }

    fn count(&self, outcome: &str) {
        count(&self.sent, outcome);
    }
}

fn count(sent: &Family<Vec<(String, String)>, Counter>, outcome: &str) {
    sent.get_or_create(&vec![("outcome".to_owned(), outcome.to_owned())])
        .inc();
}

async fn send_all(
    client: reqwest::Client,
    url: reqwest::Url,
    mut rx: mpsc::Receiver<FluxEvent>,
    sent: Family<Vec<(String, String)>, Counter>,
) {
    while let Some(event) = rx.recv().await {
        let outcome = send_one(&client, &url, &event).await;
        if outcome != "delivered" {
            tracing::warn!(outcome, reason = %event.reason, object = ?event.involved_object.name, "event to notification-controller not delivered");
        }
        count(&sent, outcome);
    }
}

/// One event with the recorder's retries: connection errors and 5xx (but 501) are retried
/// with exponential waits; 429 means a duplicate and is not.
async fn send_one(client: &reqwest::Client, url: &reqwest::Url, event: &FluxEvent) -> &'static str {
    let mut wait = WAIT_MIN;
    for attempt in 0..=RETRIES {
        if attempt > 0 {
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(WAIT_MAX);
        }
        match client.post(url.clone()).json(event).send().await {
            Ok(r) if r.status().is_success() => return "delivered",
            Ok(r) if r.status() == reqwest::StatusCode::TOO_MANY_REQUESTS => return "duplicate",
            Ok(r)
                if r.status().is_server_error()
                    && r.status() != reqwest::StatusCode::NOT_IMPLEMENTED => {}
            Ok(_) => return "refused",
            Err(_) => {}
        }
    }
    "failed"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_carry_the_involved_objects_group() {
        let at = DateTime::parse_from_rfc3339("2026-11-27T10:00:00.123Z")
            .unwrap()
            .to_utc();
        let k = ObjectReference {
            api_version: Some("kustomize.toolkit.fluxcd.io/v1".into()),
            kind: Some("Kustomization".into()),
            name: Some("apps".into()),
            namespace: Some("flux-system".into()),
            ..ObjectReference::default()
        };
        let e = event(
            false,
            "GateClosed",
            "held",
            &k,
            Some("main@sha1:abc"),
            at,
            "fleetgate-spoke",
            "pod-1",
        );
        let v = serde_json::to_value(&e).unwrap();
        assert_eq!(v["timestamp"], "2026-11-27T10:00:00Z");
        assert_eq!(v["severity"], "info");
        assert_eq!(
            v["metadata"]["kustomize.toolkit.fluxcd.io/revision"],
            "main@sha1:abc"
        );
        assert!(v["metadata"]["kustomize.toolkit.fluxcd.io/token"].is_string());
        assert_eq!(v["involvedObject"]["kind"], "Kustomization");
        assert!(v["involvedObject"].get("uid").is_none());
        let w = event(true, "HoldNotPermitted", "x", &k, None, at, "c", "");
        let v = serde_json::to_value(&w).unwrap();
        assert_eq!(v["severity"], "error");
        assert!(v.get("reportingInstance").is_none());
        assert!(
            v["metadata"]
                .get("kustomize.toolkit.fluxcd.io/revision")
                .is_none()
        );
        assert_eq!(api_group("v1"), "");
    }
}
