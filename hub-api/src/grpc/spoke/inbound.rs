//! What a spoke sends on its stream, for its [`Session`]: report parts go to ingestion (a
//! whole report, with what the spoke says of its persisted snapshot, when its last part
//! arrives; an object that does not convert is left out and recorded), and requests and
//! freezes made in the cluster are recorded (already in force there: a refusal is logged,
//! the spoke resends).

use fleetgate_proto::v1::{self as pb, spoke_message};
use tonic::Status;

use super::session::{Flow, Session};
use crate::grpc::convert::{
    held_from_proto, invalid, inventory_from_proto, local_gate_from_proto,
    local_request_from_proto, object_from_proto, snapshot_persistence_from_proto, to_status,
};
use crate::service::local_gates::requests::LocalRequest;
use crate::service::reports::{Inventory, Received};

impl Session {
    /// A message from the spoke: report parts go to ingestion.
    pub(super) fn inbound(
        &mut self,
        msg: Result<Option<pb::SpokeMessage>, Status>,
    ) -> Result<Flow, Status> {
        match msg {
            Ok(Some(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::Report(report)),
            })) => {
                let objects = report.objects.into_iter().map(object_from_proto);
                let parts = self.parts.get_or_insert_default();
                // One object that cannot be converted (a bad time) is left
                // out and recorded; the rest of the report is stored.
                let first = parts.held_len();
                let mut held = Received {
                    items: Vec::with_capacity(report.held_objects.len()),
                    seen: report.held_objects.len(),
                };
                for (i, o) in report.held_objects.into_iter().enumerate() {
                    let object = format!("{} {}/{}", o.kind, o.namespace, o.name);
                    match held_from_proto(first + i, o) {
                        Ok(h) => held.items.push((first + i, h)),
                        Err(e) => parts.dropped(field_of(&e), object, e.message()),
                    }
                }
                let mut local_gates = Received {
                    items: Vec::with_capacity(report.local_gates.len()),
                    seen: report.local_gates.len(),
                };
                for (i, g) in report.local_gates.into_iter().enumerate() {
                    let object = format!("Gate {}", g.name);
                    match local_gate_from_proto(i, g) {
                        Ok(g) => local_gates.items.push((i, g)),
                        Err(e) => parts.dropped(field_of(&e), object, e.message()),
                    }
                }
                let inventory = report
                    .inventory
                    .into_iter()
                    .map(inventory_from_proto)
                    .collect();
                let inventory = Inventory {
                    objects: inventory,
                    carried: report.has_inventory,
                };
                // It rides on the last part; one that does not convert is left out and
                // recorded, and the stored one stays.
                let persistence = match report.snapshot_persistence {
                    _ if report.more => None,
                    None => Some(None),
                    Some(p) => match snapshot_persistence_from_proto(p) {
                        Ok(p) => Some(Some(p)),
                        Err(e) => {
                            parts.dropped(field_of(&e), "SnapshotPersistence".into(), e.message());
                            None
                        }
                    },
                };
                let added = parts.add(objects, held, local_gates, inventory, report.more);
                if let Some(whole) = added.map_err(to_status)? {
                    // Its last part: what it held is taken, nothing is kept for the next one.
                    self.parts = None;
                    if let Some(persistence) = persistence {
                        self.inner
                            .reports
                            .snapshot_persistence(&self.cluster, persistence);
                    }
                    self.inner.reports.submit(
                        &self.cluster,
                        report.revision,
                        whole,
                        report.clock_offset_ms,
                    );
                }
                Ok(Flow::Continue)
            }
            Ok(Some(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::Hello(_)),
            })) => Err(invalid("hello", "only the first message may be a Hello")),
            Ok(Some(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::LocalRequest(r)),
            })) if r.gate == fleetgate_policy::FREEZE_GATE => {
                match crate::grpc::convert::local_freeze_from_proto(r) {
                    Ok(freeze) => Ok(Flow::Freeze(freeze)),
                    Err(status) => {
                        self.not_recorded(&status);
                        Ok(Flow::Continue)
                    }
                }
            }
            Ok(Some(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::LocalRequest(r)),
            })) => match local_request_from_proto(r) {
                Ok(request) => Ok(Flow::Record(request)),
                Err(status) => {
                    self.inner.metrics.local_request("invalid", "refused");
                    self.not_recorded(&status);
                    Ok(Flow::Continue)
                }
            },
            Ok(Some(pb::SpokeMessage { msg: None })) => Ok(Flow::Continue),
            Ok(None) => Ok(Flow::End),
            Err(status) => {
                tracing::debug!(cluster = %self.cluster, %status, "spoke stream broke");
                Ok(Flow::End)
            }
        }
    }

    /// Records a request made in the cluster. It is already in force there:
    /// a refusal is logged, not fatal to the stream (the spoke resends until
    /// it is recorded).
    pub(super) async fn record(&self, request: LocalRequest) {
        let state = request.state.as_str();
        let result = self
            .inner
            .service
            .record_local_request(&self.cluster, request)
            .await;
        let counted = match result {
            Ok(Some(o)) => {
                tracing::info!(cluster = %self.cluster, gate = %o.gate, state = %o.state, actor = %o.actor, "recorded a request made in the cluster");
                "recorded"
            }
            Ok(None) => "duplicate",
            Err(e) => {
                self.not_recorded(&to_status(e));
                "refused"
            }
        };
        self.inner.metrics.local_request(state, counted);
    }

    /// Records the cluster's own freeze state: a freeze made there (already in force),
    /// or none (ending a recorded one). Refusals are logged; the spoke resends on reconnect.
    pub(super) async fn record_freeze(&self, freeze: Option<crate::service::freezes::LocalFreeze>) {
        match self
            .inner
            .service
            .record_local_freeze(&self.cluster, freeze)
            .await
        {
            Ok(Some(f)) => {
                tracing::info!(cluster = %self.cluster, id = %f.id, actor = %f.actor, ended = f.ended_at.is_some(), "recorded a freeze made in the cluster");
            }
            Ok(None) => {}
            Err(e) => self.not_recorded(&to_status(e)),
        }
    }

    fn not_recorded(&self, status: &Status) {
        tracing::warn!(cluster = %self.cluster, %status, "request made in the cluster not recorded");
    }
}

/// The field an INVALID_ARGUMENT names (its message reads `field: why`).
fn field_of(status: &Status) -> String {
    let m = status.message();
    m.split_once(": ").map_or(m, |(f, _)| f).to_string()
}
