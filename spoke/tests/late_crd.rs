//! A Flux CRD installed after the spoke started is picked up: the spoke talks
//! to the simulator through a small proxy that answers 404 for the
//! image.toolkit.fluxcd.io API group until the test "installs" it.

mod support;

use std::{
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    time::Duration,
};

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::StatusCode,
    response::{IntoResponse, Response},
};
use hyper_util::{
    client::legacy::{Client as HttpClient, connect::HttpConnector},
    rt::TokioExecutor,
};
use support::*;

const HIDDEN_GROUP: &str = "/apis/image.toolkit.fluxcd.io";

#[derive(Clone)]
struct Proxy {
    upstream: String,
    hidden: Arc<AtomicBool>,
    http: HttpClient<HttpConnector, Body>,
}

/// Forwards every request to the simulator (streaming, so watches work),
/// except the hidden group while it is hidden.
async fn forward(State(p): State<Proxy>, mut req: Request) -> Response {
    let path = req
        .uri()
        .path_and_query()
        .map(|pq| pq.as_str().to_owned())
        .unwrap_or_default();
    if p.hidden.load(Ordering::Acquire) && path.starts_with(HIDDEN_GROUP) {
        let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "status": "Failure",
            "message": "the server could not find the requested resource", "reason": "NotFound", "code": 404});
        return (StatusCode::NOT_FOUND, axum::Json(status)).into_response();
    }
    *req.uri_mut() = format!("{}{path}", p.upstream)
        .parse()
        .expect("upstream uri");
    req.headers_mut().remove(axum::http::header::HOST);
    match p.http.request(req).await {
        Ok(resp) => resp.map(Body::new),
        Err(e) => (StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_installed_later_is_watched_and_enforced() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(
        &cluster,
        serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageUpdateAutomation",
            "metadata": {"name": "bump", "namespace": NS},
            "spec": {"interval": "1m", "sourceRef": {"kind": "GitRepository", "name": "repo"},
                     "git": {"commit": {"author": {"name": "bot", "email": "bot@example.com"}}}}
        }),
    )
    .await;

    let hidden = Arc::new(AtomicBool::new(true));
    let proxy = Proxy {
        upstream: cluster.sim.url(CLUSTER).expect("sim url"),
        hidden: hidden.clone(),
        http: HttpClient::builder(TokioExecutor::new()).build_http(),
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy_url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(async move {
        axum::serve(listener, Router::new().fallback(forward).with_state(proxy)).await
    });

    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![gate(
            "images",
            "suspend",
            &["ImageUpdateAutomation"],
            "closed",
        )],
        vec![],
    ));
    let mut config = spoke_config(Some(hub.url()));
    config.discovery_interval = Duration::from_secs(1);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let client = kube::Client::try_from(kube::Config::new(proxy_url.parse().unwrap())).unwrap();
    let spoke = fleetgate_spoke::Spoke::start(client, config, shutdown.clone())
        .await
        .unwrap();

    // While the CRD is "missing" the spoke runs (ready, enforcing the rest)
    // and leaves the object alone: it cannot see it.
    let mut rx = spoke.ctx.report.subscribe();
    tokio::time::timeout(
        WAIT,
        rx.wait_for(|r| r.as_ref().is_some_and(|r| r.revision == 1)),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(
        !spoke
            .ctx
            .watches
            .watched()
            .await
            .contains(&fleetgate_policy::FluxKind::ImageUpdateAutomation)
    );
    let iua = api(&cluster.client, "ImageUpdateAutomation")
        .get("bump")
        .await
        .unwrap();
    assert!(!suspended(&iua));

    // "Install" the CRD: the next discovery round starts a watch and the
    // closed gate suspends the object.
    hidden.store(false, Ordering::Release);
    wait_for(
        &cluster.client,
        "ImageUpdateAutomation",
        "bump",
        "suspended once discovered",
        |o| {
            suspended(o)
                && annotation(o, fleetgate_spoke::suspend::annotations::SUSPENDED_BY)
                    == Some("images")
        },
    )
    .await;
    spoke.stop().await;
    drop(shutdown);
    hub.stop().await;
    server.abort();
    cluster.sim.shutdown().await;
}
