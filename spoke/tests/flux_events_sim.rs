//! `--events-addr`: the spoke under the simulator sends its events to a real local HTTP
//! receiver standing in for Flux's notification-controller, in the shape fluxcd/pkg defines
//! (`apis/event/v1beta1/event.go`, POSTed as `runtime/events/recorder.go` does): a holdObjects
//! gate closing sends `ObjectsHeld` and opening it `ObjectsReleased` about the Kustomization; a
//! suspend gate closing sends `GateClosed` with the Kustomization's revision and opening it
//! `GateOpened`; a HelmRelease's `GateClosed` and `GateOpened` carry the chart version it
//! deployed (`status.history`: HelmRelease v2 has no `lastAppliedRevision`). The receiver checks each body against the upstream type: required fields,
//! nothing unknown, severity, timestamp, and metadata keys under the involved object's API
//! group (the only ones notification-controller forwards).

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use fleetgate_proto::v1 as pb;
use serde::Deserialize;
use serde_json::json;
use support::*;

/// `corev1.ObjectReference` as JSON (every field omitempty).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct ObjectReference {
    kind: String,
    namespace: String,
    name: String,
    uid: Option<String>,
    api_version: String,
    resource_version: Option<String>,
    field_path: Option<String>,
}

/// fluxcd/pkg `apis/event/v1beta1/event.go` `Event`: the required fields are not optional.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FluxEvent {
    involved_object: ObjectReference,
    severity: String,
    timestamp: String,
    message: String,
    reason: String,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    reporting_controller: String,
    reporting_instance: Option<String>,
}

#[derive(Default)]
struct Received {
    events: Mutex<Vec<FluxEvent>>,
    problems: Mutex<Vec<String>>,
    arrived: tokio::sync::Notify,
}

async fn receive(
    State(r): State<Arc<Received>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let mut problems = Vec::new();
    if headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        != Some("application/json")
    {
        problems.push(format!(
            "content-type {:?}",
            headers.get(header::CONTENT_TYPE)
        ));
    }
    match serde_json::from_slice::<FluxEvent>(&body) {
        Err(e) => problems.push(format!("{e}: {}", String::from_utf8_lossy(&body))),
        Ok(e) => {
            if !["trace", "info", "error"].contains(&e.severity.as_str()) {
                problems.push(format!("severity {}", e.severity));
            }
            // metav1.Time: RFC 3339 in seconds, UTC.
            if chrono::DateTime::parse_from_rfc3339(&e.timestamp).is_err()
                || !e.timestamp.ends_with('Z')
                || e.timestamp.contains('.')
            {
                problems.push(format!("timestamp {}", e.timestamp));
            }
            if e.message.is_empty() || e.message.len() > 39_000 || e.reason.is_empty() {
                problems.push(format!("message/reason {e:?}"));
            }
            let group = e
                .involved_object
                .api_version
                .rsplit_once('/')
                .map(|(g, _)| g);
            for k in e.metadata.keys() {
                if group.is_none_or(|g| !k.starts_with(&format!("{g}/"))) {
                    problems.push(format!("metadata key {k} outside the object's group"));
                }
            }
            r.events.lock().unwrap().push(e);
        }
    }
    r.problems.lock().unwrap().extend(problems);
    r.arrived.notify_waiters();
    StatusCode::ACCEPTED
}

impl Received {
    /// Waits (bounded) until an event with `reason` has arrived; returns its index.
    async fn wait(&self, reason: &str) -> usize {
        tokio::time::timeout(WAIT, async {
            loop {
                let arrived = self.arrived.notified();
                if let Some(i) =
                    (self.events.lock().unwrap().iter()).position(|e| e.reason == reason)
                {
                    return i;
                }
                arrived.await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {reason} event reached the receiver"))
    }
}

fn hold_gate(default: &str) -> pb::GateRule {
    let manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "window"},
        "spec": {
            "clusters": {"names": [CLUSTER]}, "mode": "holdObjects",
            "targets": {"names": ["apps"]},
            "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}]},
            "default": default,
        }
    });
    pb::GateRule {
        name: "window".into(),
        version: 1,
        manifest_json: manifest.to_string(),
        release: None,
        waiting: None,
        opening_fence: None,
        calendars: vec![],
    }
}

/// The receiver, serving on a loopback port: what it received, and its address.
async fn start_receiver() -> (Arc<Received>, std::net::SocketAddr) {
    let received = Arc::new(Received::default());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/", post(receive))
        .with_state(received.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (received, addr)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoke_events_reach_notification_controller_in_fluxs_shape() {
    let (received, addr) = start_receiver().await;

    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    let mut apps = kustomization("apps", "repo", false);
    apps["spec"]["path"] = json!("./apps");
    create(&cluster, apps).await;
    let deployment = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: flux-system}\nspec: {replicas: 1}\n";
    let manifests = BTreeMap::from([("apps".to_string(), deployment.to_string())]);
    (cluster.sim)
        .push_manifests(
            CLUSTER,
            ("GitRepository", NS, "repo"),
            &revision(1),
            &manifests,
        )
        .await
        .expect("push");
    let want = revision(1);
    wait_for(&cluster.client, "Kustomization", "apps", "applied", |o| {
        status_str(o, "/status/lastAppliedRevision") == Some(want.as_str())
    })
    .await;

    let hub = FakeHub::start().await;
    hub.set(snapshot(1, vec![hold_gate("closed")], vec![]));
    let mut config = spoke_config(Some(hub.url()));
    config.held_kinds = vec!["apps/v1/Deployment".parse().unwrap()];
    config.events_addr = Some(format!("http://{addr}/"));
    config.instance = Some("fleetgate-spoke-7d9f".into());
    let spoke = RunningSpoke::start(&cluster, config).await;

    // holdObjects closed: ObjectsHeld about the Kustomization.
    received.wait("ObjectsHeld").await;
    // Opened, and a suspend gate closes the Kustomization itself.
    hub.set(snapshot(
        2,
        vec![
            hold_gate("open"),
            gate_named("freeze", "suspend", &["apps"], "closed"),
        ],
        vec![],
    ));
    received.wait("ObjectsReleased").await;
    let closed = received.wait("GateClosed").await;
    hub.set(snapshot(
        3,
        vec![
            hold_gate("open"),
            gate_named("freeze", "suspend", &["apps"], "open"),
        ],
        vec![],
    ));
    let opened = received.wait("GateOpened").await;
    assert!(closed < opened);

    let problems = received.problems.lock().unwrap().clone();
    assert!(problems.is_empty(), "{problems:#?}");
    let events = std::mem::take(&mut *received.events.lock().unwrap());
    for e in events.iter() {
        let o = &e.involved_object;
        assert_eq!(
            (
                o.api_version.as_str(),
                o.kind.as_str(),
                o.namespace.as_str(),
                o.name.as_str()
            ),
            (
                "kustomize.toolkit.fluxcd.io/v1",
                "Kustomization",
                NS,
                "apps"
            ),
            "{e:?}"
        );
        assert_eq!(e.severity, "info", "{e:?}");
        assert_eq!(e.reporting_controller, "fleetgate-spoke");
        assert_eq!(
            e.reporting_instance.as_deref(),
            Some("fleetgate-spoke-7d9f")
        );
        assert!(
            e.metadata.contains_key("kustomize.toolkit.fluxcd.io/token"),
            "{e:?}"
        );
    }
    let gate_closed = &events[closed];
    assert!(gate_closed.message.contains("freeze"), "{gate_closed:?}");
    assert!(
        gate_closed
            .involved_object
            .uid
            .as_deref()
            .is_some_and(|u| !u.is_empty())
    );
    assert_eq!(
        gate_closed
            .metadata
            .get("kustomize.toolkit.fluxcd.io/revision"),
        Some(&revision(1)),
        "{gate_closed:?}"
    );
    let tokens: std::collections::BTreeSet<&String> = (events.iter())
        .map(|e| &e.metadata["kustomize.toolkit.fluxcd.io/token"])
        .collect();
    assert_eq!(tokens.len(), events.len(), "one token per occurrence");
    spoke.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_helm_releases_gate_events_carry_its_deployed_chart_version() {
    let (received, addr) = start_receiver().await;
    let cluster = start_cluster().await;
    create(&cluster, helm_repository("charts")).await;
    create(&cluster, helm_release("web", "charts")).await;
    push_kind(&cluster, "HelmRepository", "charts", "sha256:index-1").await;
    // helm-controller's generated HelmChart `<namespace>-<name>`.
    push_kind(&cluster, "HelmChart", "flux-system-web", "1.4.2").await;
    wait_for(
        &cluster.client,
        "HelmRelease",
        "web",
        "1.4.2 deployed",
        |o| status_str(o, "/status/history/0/chartVersion") == Some("1.4.2"),
    )
    .await;

    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![gate("helm", "suspend", &["HelmRelease"], "closed")],
        vec![],
    ));
    let mut config = spoke_config(Some(hub.url()));
    config.events_addr = Some(format!("http://{addr}/"));
    let spoke = RunningSpoke::start(&cluster, config).await;
    let closed = received.wait("GateClosed").await;
    hub.set(snapshot(
        2,
        vec![gate("helm", "suspend", &["HelmRelease"], "open")],
        vec![],
    ));
    let opened = received.wait("GateOpened").await;

    let problems = received.problems.lock().unwrap().clone();
    assert!(problems.is_empty(), "{problems:#?}");
    let events = std::mem::take(&mut *received.events.lock().unwrap());
    for e in [&events[closed], &events[opened]] {
        assert_eq!(
            (
                e.involved_object.kind.as_str(),
                e.involved_object.name.as_str()
            ),
            ("HelmRelease", "web"),
            "{e:?}"
        );
        assert_eq!(
            e.metadata
                .get("helm.toolkit.fluxcd.io/revision")
                .map(String::as_str),
            Some("1.4.2"),
            "{e:?}"
        );
    }
    spoke.stop().await;
}
