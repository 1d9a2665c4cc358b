//! A stand-in spoke for dashboard tests: opens the real gRPC `Connect`
//! stream with a cluster's token and reports governed objects, so the hub
//! shows it connected with held changes — without a Kubernetes cluster.

use std::time::Duration;

use fleetgate_proto::v1::spoke_service_client::SpokeServiceClient;
use fleetgate_proto::v1::{self as pb, spoke_message};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Request;
use tonic::transport::Endpoint;

/// One connected fake spoke; the stream stays open while this lives.
pub struct FakeSpoke {
    tx: mpsc::Sender<pb::SpokeMessage>,
    _responses: tonic::Streaming<pb::HubMessage>,
}

impl FakeSpoke {
    /// Connects as `cluster` with its spoke `token` and reports `objects`.
    pub async fn connect(grpc_port: u16, cluster: &str, token: &str) -> FakeSpoke {
        let channel = Endpoint::from_shared(format!("http://127.0.0.1:{grpc_port}"))
            .expect("endpoint")
            .connect_timeout(Duration::from_secs(5))
            .connect()
            .await
            .expect("gRPC connect");
        let (tx, rx) = mpsc::channel(8);
        tx.send(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Hello(pb::Hello {
                local_gates_enforced: Default::default(),
                cluster: cluster.into(),
                spoke_version: "0.1.0".into(),
                revision: 0,
                ..Default::default()
            })),
        })
        .await
        .expect("queue hello");
        let mut req = Request::new(ReceiverStream::new(rx));
        req.metadata_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("metadata"),
        );
        let mut responses = SpokeServiceClient::new(channel)
            .connect(req)
            .await
            .expect("Connect")
            .into_inner();
        // The first snapshot means the hub accepted us.
        let first = tokio::time::timeout(Duration::from_secs(20), responses.message())
            .await
            .expect("snapshot in time");
        assert!(matches!(first, Ok(Some(_))), "no snapshot: {first:?}");
        FakeSpoke {
            tx,
            _responses: responses,
        }
    }

    /// Reports objects (clock offset 120 ms).
    pub async fn report(&self, objects: Vec<pb::ObjectStatus>) {
        self.report_held(objects, vec![]).await;
    }

    /// Reports objects and the objects inside Kustomizations that holdObjects
    /// gates select.
    pub async fn report_held(
        &self,
        objects: Vec<pb::ObjectStatus>,
        held_objects: Vec<pb::HeldObjectStatus>,
    ) {
        self.report_at(0, objects, held_objects).await;
    }

    /// Reports as a spoke that enforces the snapshot `revision` (`i64::MAX`: has seen every
    /// snapshot, so rollout health counts the report as made after any release).
    pub async fn report_at(
        &self,
        revision: u64,
        objects: Vec<pb::ObjectStatus>,
        held_objects: Vec<pb::HeldObjectStatus>,
    ) {
        self.report_full(revision, objects, held_objects, vec![])
            .await;
    }

    /// Reports everything a spoke reports, local gates (Gate objects made in
    /// the cluster) included.
    pub async fn report_full(
        &self,
        revision: u64,
        objects: Vec<pb::ObjectStatus>,
        held_objects: Vec<pb::HeldObjectStatus>,
        local_gates: Vec<pb::LocalGateStatus>,
    ) {
        self.tx
            .send(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::Report(pb::StatusReport {
                    local_gates,
                    inventory: Default::default(),
                    has_inventory: false,
                    snapshot_persistence: None,
                    revision,
                    objects,
                    clock_offset_ms: 120,
                    observed_at: None,
                    more: false,
                    held_objects,
                })),
            })
            .await
            .expect("report");
    }
}

impl FakeSpoke {
    /// Reports an open/close request made in the cluster on `gate` by the
    /// Kubernetes user `by`, stamped a minute ago, lasting an hour.
    pub async fn request(&self, gate: &str, state: &str, by: &str, reason: &str) {
        use fleetgate_proto::time::to_timestamp;
        let at = chrono::Utc::now() - chrono::Duration::minutes(1);
        self.tx
            .send(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::LocalRequest(pb::LocalRequest {
                    gate: gate.into(),
                    state: state.into(),
                    requested_at: Some(to_timestamp(at)),
                    expires_at: Some(to_timestamp(at + chrono::Duration::hours(1))),
                    reason: reason.into(),
                    requested_by: by.into(),
                })),
            })
            .await
            .expect("request");
    }
}

/// A governed object as a spoke reports it; `held` = a newer revision waits.
pub fn object(kind: &str, ns: &str, name: &str, gates: &[&str], held: bool) -> pb::ObjectStatus {
    let gates: Vec<String> = gates.iter().map(|g| g.to_string()).collect();
    pb::ObjectStatus {
        kind: kind.into(),
        namespace: ns.into(),
        name: name.into(),
        suspended: held,
        suspended_by: if held { gates.clone() } else { vec![] },
        gates,
        last_applied_revision: "main@sha1:4f2a9c1".into(),
        newest_source_revision: if held {
            "main@sha1:9be03d7".into()
        } else {
            "main@sha1:4f2a9c1".into()
        },
        held,
        suspended_by_human: false,
        ignored: false,
        ready: "True".into(),
        ready_reason: "ReconciliationSucceeded".into(),
        ready_message: "Applied revision: main@sha1:4f2a9c1".into(),
        generation: 1,
        observed_generation: 1,
        last_attempted_revision: "main@sha1:4f2a9c1".into(),
        ..Default::default()
    }
}
