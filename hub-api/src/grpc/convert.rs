//! Plain conversions between the hub's types and `fleetgate.v1` messages, and
//! from the hub's [`Error`] to a gRPC [`Status`] (field path first in the
//! message, internal details hidden).

use chrono::{DateTime, Utc};
use fleetgate_proto::time::{from_timestamp, to_timestamp};
use fleetgate_proto::v1 as pb;
use tonic::{Code, Status};

use crate::Error;
use crate::db::held_objects::HeldObject;
use crate::db::reports::LocalGate;
use crate::db::reports::ReportedObject;
use crate::service::fleet::Snapshot;
use crate::service::local_gates::requests::LocalRequest;

/// The gRPC status for a hub error.
pub fn to_status(e: Error) -> Status {
    let code = match &e {
        Error::Unauthenticated(_) => Code::Unauthenticated,
        Error::Forbidden(_) | Error::Denied { .. } => Code::PermissionDenied,
        Error::NotFound { .. } => Code::NotFound,
        // Duplicate names and stale versions: the caller must re-read first.
        Error::Conflict { .. } => Code::FailedPrecondition,
        Error::BadRequest { .. } | Error::Invalid { .. } => Code::InvalidArgument,
        Error::PayloadTooLarge => Code::ResourceExhausted,
        // The database is down: retry later (spokes and clients back off).
        Error::Unavailable(_) | Error::Upstream(_) => Code::Unavailable,
        // Any other input error the REST side knows (e.g. media types).
        other if other.status().is_client_error() => Code::InvalidArgument,
        _ => {
            tracing::error!(error = %e, "gRPC request failed");
            Code::Internal
        }
    };
    let message = match e.field() {
        Some(field) if !field.is_empty() => format!("{field}: {}", e.public_message()),
        _ => e.public_message(),
    };
    Status::new(code, message)
}

/// INVALID_ARGUMENT naming `field`.
pub fn invalid(field: &str, message: impl std::fmt::Display) -> Status {
    Status::invalid_argument(format!("{field}: {message}"))
}

/// A snapshot as sent to a spoke, stamped with the hub's clock, with the
/// hub's `--local-gates` setting.
pub fn snapshot_to_proto(
    s: &Snapshot,
    hub_time: DateTime<Utc>,
    local_gates_enforced: bool,
) -> pb::Snapshot {
    pb::Snapshot {
        revision: s.revision,
        cluster: s.cluster.clone(),
        gates: s
            .gates
            .iter()
            .map(|g| pb::GateRule {
                name: g.name.clone(),
                version: g.version,
                manifest_json: g.manifest_json.to_string(),
                release: g.release.as_ref().map(|r| pb::RolloutRelease {
                    rollout_id: r.rollout_id.clone(),
                    opening_at: Some(to_timestamp(r.opening_at)),
                    wave: r.wave,
                }),
                waiting: g.waiting.as_ref().map(|w| pb::RolloutWaiting {
                    rollout_id: w.rollout_id.clone(),
                    wave: w.wave,
                    wave_name: w.wave_name.clone(),
                }),
                opening_fence: g.opening_fence.map(to_timestamp),
                calendars: g.calendars.iter().map(calendar_to_proto).collect(),
            })
            .collect(),
        overrides: s.overrides.iter().map(override_to_proto).collect(),
        hub_time: Some(to_timestamp(hub_time)),
        local_gates_enforced,
    }
}

/// The id of the freeze a cluster gets while its snapshot is over its budget.
pub const OVER_BUDGET_FREEZE_ID: &str = "snapshot-over-budget";

/// Fails closed when `snapshot` is over [`SNAPSHOT_MAX_BYTES`], which the spoke could not
/// decode or persist: its gates are dropped and a freeze by the hub itself is added to its
/// overrides (real freezes and overrides stay), so the spoke holds everything the gates
/// would govern and no missing gate opens anything. Returns the size it had.
///
/// [`SNAPSHOT_MAX_BYTES`]: fleetgate_policy::budgets::SNAPSHOT_MAX_BYTES
pub fn close_if_over_budget(snapshot: &mut pb::Snapshot) -> Option<usize> {
    use fleetgate_policy::budgets::SNAPSHOT_MAX_BYTES;
    use prost::Message;
    let size = snapshot.encoded_len();
    if size <= SNAPSHOT_MAX_BYTES {
        return None;
    }
    snapshot.gates.clear();
    let epoch = Some(to_timestamp(DateTime::<Utc>::UNIX_EPOCH));
    snapshot.overrides.push(pb::Override {
        id: OVER_BUDGET_FREEZE_ID.into(),
        gate: fleetgate_policy::FREEZE_GATE.into(),
        state: "closed".into(),
        starts_at: epoch,
        expires_at: None,
        actor: "fleetgate-hub".into(),
        reason: format!(
            "this cluster's snapshot is {size} bytes, over the budget of {SNAPSHOT_MAX_BYTES}: held closed until its gates fit"
        ),
        created_at: epoch,
    });
    Some(size)
}

/// A gate-model override as the spoke receives it.
pub fn override_to_proto(o: &fleetgate_policy::Override) -> pb::Override {
    pb::Override {
        id: o.id.clone(),
        gate: o.gate.clone(),
        state: o.state.to_string(),
        starts_at: Some(to_timestamp(o.starts_at)),
        expires_at: o.expires_at.map(to_timestamp),
        actor: o.actor.clone(),
        reason: o.reason.clone(),
        created_at: Some(to_timestamp(o.created_at)),
    }
}

/// Builds `$ty { .. }` from the reported object `$o` (a spoke's
/// `ObjectStatus`, or the stored record on its way to an admin
/// `GovernedObject`): the one list of a reported object's fields. Fields
/// present on both sides are moved; optional texts and numbers go through
/// `$text` and `$number` (protobuf writes "absent" as `""` and `0`); `$rest`
/// adds what only the target has.
macro_rules! reported_object {
    ($($ty:ident)::+, $o:ident, text: $text:expr, number: $number:expr $(, $($rest:tt)*)?) => {
        $($ty)::+ {
            kind: $o.kind,
            namespace: $o.namespace,
            name: $o.name,
            suspended: $o.suspended,
            suspended_by: $o.suspended_by,
            gates: $o.gates,
            last_applied_revision: $text($o.last_applied_revision),
            newest_source_revision: $text($o.newest_source_revision),
            held: $o.held,
            suspended_by_human: $o.suspended_by_human,
            ignored: $o.ignored,
            ready: $text($o.ready),
            ready_reason: $text($o.ready_reason),
            ready_message: $text($o.ready_message),
            stalled: $o.stalled,
            generation: $number($o.generation),
            observed_generation: $number($o.observed_generation),
            last_attempted_revision: $text($o.last_attempted_revision),
            would_suspend_by: $o.would_suspend_by,
            would_hold: $o.would_hold,
            $($($rest)*)?
        }
    };
}
pub(crate) use reported_object;

/// Builds `$ty { .. }` from the held object `$o` (a spoke's
/// `HeldObjectStatus`, or the stored record on its way to an admin
/// `HeldObject`): the one list of a held object's fields, as
/// [`reported_object!`] is for reported objects; `held_since` is converted by
/// each side.
macro_rules! held_object {
    ($($ty:ident)::+, $o:ident, text: $text:expr, $($rest:tt)*) => {
        $($ty)::+ {
            group: $o.group,
            kind: $o.kind,
            namespace: $o.namespace,
            name: $o.name,
            kustomization_namespace: $o.kustomization_namespace,
            kustomization_name: $o.kustomization_name,
            gates: $o.gates,
            held_by: $o.held_by,
            held_by_person: $o.held_by_person,
            held_since_revision: $text($o.held_since_revision),
            newer_revision_applied: $o.newer_revision_applied,
            not_permitted: $o.not_permitted,
            would_hold_by: $o.would_hold_by,
            would_hold_since_revision: $text($o.would_hold_since_revision),
            would_hold_newer_revision: $o.would_hold_newer_revision,
            $($rest)*
        }
    };
}
pub(crate) use held_object;

/// A protobuf text as an optional one (`""` means absent).
pub(crate) fn opt_text(s: String) -> Option<String> {
    (!s.is_empty()).then_some(s)
}

/// A protobuf number as an optional one (`0` means absent).
pub(crate) fn opt_number(n: i64) -> Option<i64> {
    (n != 0).then_some(n)
}

/// A reported object as stored (empty revision strings mean "unknown").
pub fn object_from_proto(o: pb::ObjectStatus) -> ReportedObject {
    reported_object!(ReportedObject, o, text: opt_text, number: opt_number)
}

/// An inventory entry as stored. PostgreSQL's JSON cannot hold U+0000: it becomes U+FFFD
/// (the inventory only feeds previews; a name is still recognisable).
pub fn inventory_from_proto(o: pb::InventoryObject) -> crate::db::inventories::InventoryObject {
    let clean = |s: String| {
        if s.contains('\0') {
            s.replace('\0', "\u{FFFD}")
        } else {
            s
        }
    };
    crate::db::inventories::InventoryObject {
        kind: clean(o.kind),
        namespace: clean(o.namespace),
        name: clean(o.name),
        labels: o
            .labels
            .into_iter()
            .map(|(k, v)| (clean(k), clean(v)))
            .collect(),
        sources: o.sources.into_iter().map(clean).collect(),
        suspended_by_human: o.suspended_by_human,
        ignored: o.ignored,
    }
}

/// Whether the spoke could persist its snapshot, as stored. `state` must be `persisted`,
/// `failing` or `none` and `failing_since` a valid time (INVALID_ARGUMENT naming the field,
/// and the report goes without it); the error text is cut to 1 KiB and U+0000 becomes U+FFFD
/// (PostgreSQL's JSON cannot hold it).
pub fn snapshot_persistence_from_proto(
    p: pb::SnapshotPersistence,
) -> Result<fleetgate_api_types::SnapshotPersistence, Status> {
    const FIELD: &str = "report.snapshot_persistence";
    if !matches!(p.state.as_str(), "persisted" | "failing" | "none") {
        return Err(invalid(
            &format!("{FIELD}.state"),
            format!("{:?} is not persisted, failing or none", p.state),
        ));
    }
    let failing_since =
        match p.failing_since.as_ref() {
            None => None,
            Some(t) => Some(from_timestamp(t).ok_or_else(|| {
                invalid(&format!("{FIELD}.failing_since"), "out-of-range timestamp")
            })?),
        };
    let mut error = p.error.replace('\0', "\u{FFFD}");
    if error.len() > 1024 {
        let mut cut = 1021;
        while !error.is_char_boundary(cut) {
            cut -= 1;
        }
        error.truncate(cut);
        error.push_str("...");
    }
    Ok(fleetgate_api_types::SnapshotPersistence {
        state: p.state,
        persisted_revision: p.persisted_revision,
        stored_bytes: p.stored_bytes,
        json_bytes: p.json_bytes,
        config_maps: p.config_maps,
        error: (!error.is_empty()).then_some(error),
        failing_revision: (p.failing_revision > 0).then_some(p.failing_revision),
        failing_since,
    })
}

/// The `index`th held object of a report as stored; `held_since` must be
/// RFC 3339 when set (INVALID_ARGUMENT naming the field otherwise).
pub fn held_from_proto(index: usize, o: pb::HeldObjectStatus) -> Result<HeldObject, Status> {
    let held_since = match o.held_since.as_str() {
        "" => None,
        t => Some(
            DateTime::parse_from_rfc3339(t)
                .map_err(|e| invalid(&format!("report.held_objects[{index}].held_since"), e))?
                .with_timezone(&Utc),
        ),
    };
    Ok(held_object!(HeldObject, o, text: opt_text, held_since))
}

/// The `index`th local gate of a report as stored; fields are checked by
/// [`crate::service::reports::objects::local_gates`], times here
/// (INVALID_ARGUMENT naming the field).
pub fn local_gate_from_proto(index: usize, g: pb::LocalGateStatus) -> Result<LocalGate, Status> {
    let next_transition = match g.next_transition.as_ref() {
        None => None,
        Some(t) => Some(from_timestamp(t).ok_or_else(|| {
            invalid(
                &format!("report.local_gates[{index}].next_transition"),
                "out-of-range timestamp",
            )
        })?),
    };
    Ok(LocalGate {
        name: g.name,
        enforced: g.enforced,
        state: if g.open { "open" } else { "closed" }.into(),
        reason: g.reason,
        message: g.message,
        next_transition,
        governed: g.governed,
        held: g.held,
        ready: g.ready,
        ready_reason: g.ready_reason,
        ready_message: g.ready_message,
    })
}

/// A spoke's report of a request made in its cluster, checked field by field.
pub fn local_request_from_proto(r: pb::LocalRequest) -> Result<LocalRequest, Status> {
    let time = |t: Option<&prost_types::Timestamp>, field: &str| {
        t.and_then(from_timestamp)
            .ok_or_else(|| invalid(field, "missing or out-of-range timestamp"))
    };
    Ok(LocalRequest {
        state: r
            .state
            .parse()
            .map_err(|e: fleetgate_policy::PolicyError| invalid("localRequest.state", e.message))?,
        requested_at: time(r.requested_at.as_ref(), "localRequest.requestedAt")?,
        expires_at: time(r.expires_at.as_ref(), "localRequest.expiresAt")?,
        // The cluster's own text: stored with U+0000 replaced, never refused.
        gate: fleetgate_policy::text::replace_str(&r.gate).into_owned(),
        reason: fleetgate_policy::text::replace_str(&r.reason).into_owned(),
        requested_by: fleetgate_policy::text::replace_str(&r.requested_by).into_owned(),
    })
}

/// The cluster's own freeze state, sent as a request on the reserved gate: `closed` — a
/// freeze made there is in force since `requested_at` (until `expires_at` if set); `open` —
/// none is.
pub fn local_freeze_from_proto(
    r: pb::LocalRequest,
) -> Result<Option<crate::service::freezes::LocalFreeze>, Status> {
    if r.state == "open" {
        return Ok(None);
    }
    let requested_at = r
        .requested_at
        .as_ref()
        .and_then(from_timestamp)
        .ok_or_else(|| {
            invalid(
                "localRequest.requestedAt",
                "missing or out-of-range timestamp",
            )
        })?;
    Ok(Some(crate::service::freezes::LocalFreeze {
        requested_at,
        expires_at: r.expires_at.as_ref().and_then(from_timestamp),
        reason: fleetgate_policy::text::replace_str(&r.reason).into_owned(),
        requested_by: fleetgate_policy::text::replace_str(&r.requested_by).into_owned(),
    }))
}

/// One feed window's occurrences, for a spoke.
pub fn calendar_to_proto(c: &fleetgate_policy::FeedOccurrences) -> pb::CalendarOccurrences {
    pb::CalendarOccurrences {
        window: c.window.clone(),
        occurrences: c
            .occurrences
            .iter()
            .map(|o| pb::CalendarOccurrence {
                start: Some(to_timestamp(o.start)),
                end: Some(to_timestamp(o.end)),
                summary: o.summary.to_string(),
            })
            .collect(),
        stale_at: c.stale_at.map(to_timestamp),
    }
}

/// A timestamp field.
pub(super) fn ts(at: DateTime<Utc>) -> Option<prost_types::Timestamp> {
    Some(to_timestamp(at))
}

/// A count as `u64` (saturating).
pub(super) fn count(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// A stored count as `u64` (negative: 0).
pub(super) fn count_i64(n: i64) -> u64 {
    u64::try_from(n).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_input_names_the_field() {
        let s = to_status(Error::invalid("spec.windows[0].schedule", "bad cron"));
        assert_eq!(s.code(), Code::InvalidArgument);
        assert_eq!(s.message(), "spec.windows[0].schedule: bad cron");
    }

    #[test]
    fn held_since_must_be_rfc3339() {
        let mut o = pb::HeldObjectStatus {
            kind: "Deployment".into(),
            held_since: "2026-11-24T10:00:00Z".into(),
            ..Default::default()
        };
        let h = held_from_proto(0, o.clone()).unwrap();
        assert_eq!(
            h.held_since.unwrap().to_rfc3339(),
            "2026-11-24T10:00:00+00:00"
        );
        assert_eq!(h.held_since_revision, None);
        o.held_since = "yesterday".into();
        let s = held_from_proto(4, o).unwrap_err();
        assert_eq!(s.code(), Code::InvalidArgument);
        assert!(
            s.message()
                .starts_with("report.held_objects[4].held_since: "),
            "{}",
            s.message()
        );
    }

    #[test]
    fn internal_details_are_hidden() {
        let s = to_status(Error::Internal("secret detail".into()));
        assert_eq!(s.code(), Code::Internal);
        assert!(!s.message().contains("secret"));
    }

    #[test]
    fn database_outage_is_unavailable() {
        let s = to_status(Error::from(sqlx::Error::PoolTimedOut));
        assert_eq!(s.code(), Code::Unavailable);
        assert!(s.message().contains("unreachable"), "{}", s.message());
    }

    #[test]
    fn auth_codes() {
        assert_eq!(
            to_status(Error::Unauthenticated("x".into())).code(),
            Code::Unauthenticated
        );
        assert_eq!(
            to_status(Error::Forbidden("x".into())).code(),
            Code::PermissionDenied
        );
        assert_eq!(
            to_status(Error::not_found("gate", "g")).code(),
            Code::NotFound
        );
    }
}
