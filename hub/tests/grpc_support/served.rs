//! One replica as a hub process serves it, inside the test: the REST router
//! and gRPC on a loopback socket over one state and one shutdown, with
//! WatchFleet and the dashboard's event stream (SSE) opened as a viewer would.

use axum::Router;
use axum::body::{Body, BodyDataStream};
use axum::http::{Method, Request, Response, StatusCode};
use fleetgate_hub::Service;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{AppState, app};
use fleetgate_proto::v1 as pb;
use futures::StreamExt as _;
use serde_json::Value;
use tower::ServiceExt as _;

use super::{Grpc, TestSpoke, authed, within};

/// A replica serving REST (`http`, called in process) and gRPC (`grpc`).
pub struct Served {
    pub http: Router,
    pub grpc: Grpc,
    /// The replica both serve (its fleet feed, reports, metrics).
    pub replica: Replica,
}

impl Served {
    /// Serves `service` as a replica with the gRPC tests' options ([`Grpc::opts`]).
    pub async fn of(service: Service) -> Served {
        Served::start(Replica::new(service, HttpOptions::default(), Grpc::opts())).await
    }

    /// Serves `replica`: gRPC on a loopback port, REST as a router; stopping
    /// the gRPC server ends the REST side's streams too.
    pub async fn start(replica: Replica) -> Served {
        let grpc = Grpc::start_replica(replica.clone()).await;
        let state = AppState {
            shutdown: grpc.shutdown.clone(),
            ..AppState::from_replica(replica.clone())
        };
        Served {
            http: app(state),
            grpc,
            replica,
        }
    }

    /// (status, body) of a REST call as `token`.
    pub async fn call(&self, method: Method, uri: &str, token: &str) -> (StatusCode, String) {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        let r = self.http.clone().oneshot(req).await.unwrap();
        let status = r.status();
        let bytes = axum::body::to_bytes(r.into_body(), 1 << 24).await.unwrap();
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The JSON answer of `GET uri` as `token`, which must be 200.
    pub async fn get_json(&self, uri: &str, token: &str) -> Value {
        let (status, text) = self.call(Method::GET, uri, token).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// A WatchFleet stream as `token`, opened.
    pub async fn watch(&self, token: &str) -> tonic::Streaming<pb::FleetEvent> {
        self.watch_with(pb::WatchFleetRequest::default(), token)
            .await
    }

    /// A WatchFleet stream for `req` as `token`, opened.
    pub async fn watch_with(
        &self,
        req: pb::WatchFleetRequest,
        token: &str,
    ) -> tonic::Streaming<pb::FleetEvent> {
        let mut admin = self.grpc.admin();
        within("WatchFleet", admin.watch_fleet(authed(req, token)))
            .await
            .unwrap()
            .into_inner()
    }

    /// `GetClusterStatus` of `cluster` as `token` (over gRPC).
    pub async fn cluster_status(&self, cluster: &str, token: &str) -> pb::ClusterStatus {
        let req = pb::GetClusterStatusRequest {
            name: cluster.into(),
        };
        let mut admin = self.grpc.admin();
        within(
            "GetClusterStatus",
            admin.get_cluster_status(authed(req, token)),
        )
        .await
        .unwrap()
        .into_inner()
    }

    /// A test spoke of `cluster` (its `token`) connected here, holding no revision.
    pub async fn spoke(&self, token: &str, cluster: &str) -> TestSpoke {
        TestSpoke::connect(self.grpc.channel.clone(), token, cluster, 0)
            .await
            .unwrap()
    }

    /// The dashboard's event stream (`GET /api/v1/events`) as `token`, opened.
    pub async fn events(&self, token: &str) -> Sse {
        Sse::open(&self.http, token).await
    }

    /// Drains and waits for the servers to stop.
    pub async fn stop(self) {
        self.grpc.stop().await;
    }
}

/// The dashboard's event stream as a test reads it: whole events, in order.
pub struct Sse {
    body: BodyDataStream,
    /// Read but not yet taken (an event's end may not have come yet).
    buf: String,
}

impl Sse {
    /// Opens `GET /api/v1/events` on `http` as `token` (it must answer 200).
    pub async fn open(http: &Router, token: &str) -> Sse {
        let req = Request::builder()
            .uri("/api/v1/events")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .unwrap();
        Sse::of(http.clone().oneshot(req).await.unwrap())
    }

    /// Reads the event stream of `response` (it must be 200).
    pub fn of(response: Response<Body>) -> Sse {
        assert_eq!(response.status(), StatusCode::OK);
        Sse {
            body: response.into_body().into_data_stream(),
            buf: String::new(),
        }
    }

    /// Reads until the hub ends the stream (bounded), skipping what is left.
    pub async fn end(&mut self, what: &str) {
        within(what, async {
            while let Some(chunk) = self.body.next().await {
                chunk.expect("chunk");
            }
        })
        .await;
    }

    /// The data of the next `name` event for which `want` holds (bounded;
    /// other events are skipped).
    pub async fn next(&mut self, name: &str, want: impl Fn(&Value) -> bool) -> Value {
        within(&format!("a {name} event on the event stream"), async {
            loop {
                let (event, data) = self.next_any().await;
                if event == name && want(&data) {
                    return data;
                }
            }
        })
        .await
    }

    /// The next event: its name and data (unbounded: call it inside a
    /// [`within`]).
    pub async fn next_any(&mut self) -> (String, Value) {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let field = |f: &str| {
                    block
                        .lines()
                        .find_map(|l| l.strip_prefix(f))
                        .map(str::to_string)
                };
                // Comments (keepalives) have neither.
                if let (Some(event), Some(data)) = (field("event: "), field("data: ")) {
                    return (event, serde_json::from_str(&data).unwrap());
                }
                continue;
            }
            let chunk = self
                .body
                .next()
                .await
                .expect("stream ended")
                .expect("chunk");
            self.buf.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

/// The first event on a WatchFleet stream that `pick` takes (bounded; the
/// events it does not take are skipped).
pub async fn next_event<T>(
    s: &mut tonic::Streaming<pb::FleetEvent>,
    what: &str,
    mut pick: impl FnMut(pb::FleetEvent) -> Option<T>,
) -> T {
    within(what, async {
        loop {
            let e = s.message().await.unwrap().expect("stream ended");
            if let Some(t) = pick(e) {
                return t;
            }
        }
    })
    .await
}
