//! Open and close requests made in the cluster (the Flux gating RFC's
//! `requestedAt` annotations, under fleetgate's domain): deciding whether a new
//! request is honoured, and turning honoured ones into overrides that the
//! evaluator weighs against the hub's (newest wins). Pure: no I/O, the clock is
//! a parameter.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, SecondsFormat, Utc};
use fleetgate_policy::{GateSpec, GateState, Override};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `kubectl annotate gate/X open.gate.fleetgate.io/requestedAt="$(date -u +%FT%TZ)"`.
pub const OPEN_REQUESTED_AT: &str = "open.gate.fleetgate.io/requestedAt";
pub const OPEN_REASON: &str = "open.gate.fleetgate.io/reason";
pub const CLOSE_REQUESTED_AT: &str = "close.gate.fleetgate.io/requestedAt";
pub const CLOSE_REASON: &str = "close.gate.fleetgate.io/reason";

/// Clocks of the person's machine and the spoke's differ a little; a request
/// up to this far ahead is not "in the future".
const CLOCK_SKEW: Duration = Duration::seconds(60);

/// Prefix of the override ids made from requests (hub overrides are UUIDs).
pub const LOCAL_ID_PREFIX: &str = "local:";

/// Open or close.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Open,
    Close,
}

impl Action {
    pub const ALL: [Action; 2] = [Action::Open, Action::Close];

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Open => "open",
            Action::Close => "close",
        }
    }

    fn annotations(self) -> (&'static str, &'static str) {
        match self {
            Action::Open => (OPEN_REQUESTED_AT, OPEN_REASON),
            Action::Close => (CLOSE_REQUESTED_AT, CLOSE_REASON),
        }
    }

    fn state(self) -> GateState {
        match self {
            Action::Open => GateState::Open,
            Action::Close => GateState::Closed,
        }
    }

    /// The status field recording the last request of this kind.
    pub fn status_field(self) -> &'static str {
        match self {
            Action::Open => "openRequest",
            Action::Close => "closeRequest",
        }
    }

    /// The Opened condition's reason while such a request decides.
    pub fn condition_reason(self) -> &'static str {
        match self {
            Action::Open => "OpenRequested",
            Action::Close => "CloseRequested",
        }
    }
}

/// The spoke's decision about one request, kept in the Gate's status so a
/// restarted spoke neither re-judges nor forgets it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Handled {
    /// The annotation's value, verbatim (how a request is recognised again).
    pub requested_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub requested_by: String,
    pub accepted: bool,
    pub message: String,
    /// The hub recorded it (its snapshot carries the request as an override).
    #[serde(default, skip_serializing_if = "is_false")]
    pub acknowledged: bool,
    /// The hub's copy went away after it was recorded: an admin cancelled it
    /// (or it ended); the request no longer applies here either.
    #[serde(default, skip_serializing_if = "is_false")]
    pub cancelled: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Handled {
    /// The request's timestamp, if it parses.
    pub fn requested_time(&self) -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(&self.requested_at)
            .ok()
            .map(|t| t.to_utc())
    }

    /// Whether `o` is the hub's record of this request.
    pub fn recorded_as(&self, action: Action, o: &Override) -> bool {
        o.state == action.state() && Some(o.created_at) == self.requested_time()
    }

    /// The message to the hub for an accepted request.
    pub fn to_proto(
        &self,
        gate: &str,
        action: Action,
    ) -> Option<fleetgate_proto::v1::LocalRequest> {
        use fleetgate_proto::time::to_timestamp;
        let at = self.requested_time()?;
        let expires = DateTime::parse_from_rfc3339(self.expires_at.as_deref()?)
            .ok()?
            .to_utc();
        Some(fleetgate_proto::v1::LocalRequest {
            gate: gate.to_owned(),
            state: action.state().as_str().to_owned(),
            requested_at: Some(to_timestamp(at)),
            expires_at: Some(to_timestamp(expires)),
            reason: self.reason.clone(),
            requested_by: self.requested_by.clone(),
        })
    }
}

/// What the gate is, for judging a request.
pub struct Judge<'a> {
    pub gate: &'a str,
    pub spec: &'a GateSpec,
    pub from_hub: bool,
    /// The Opened condition's lastTransitionTime, if any.
    pub last_transition: Option<DateTime<Utc>>,
    pub now: DateTime<Utc>,
}

/// A request seen on a Gate object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub action: Action,
    pub requested_at: String,
    pub reason: String,
    pub requested_by: String,
}

/// The requests on an object, read from its annotations; `requested_by` is the
/// field manager that last set the annotation (managedFields), since
/// Kubernetes records no user on objects (`kubectl annotate --field-manager`).
pub fn read(annotations: &BTreeMap<String, String>, managed_fields: &[Value]) -> Vec<Request> {
    Action::ALL
        .into_iter()
        .filter_map(|action| {
            let (at, reason) = action.annotations();
            let requested_at = annotations.get(at)?.trim().to_owned();
            Some(Request {
                action,
                requested_at,
                reason: annotations.get(reason).cloned().unwrap_or_default(),
                requested_by: manager_of(managed_fields, at).unwrap_or_default(),
            })
        })
        .collect()
}

/// The field manager owning annotation `key` (the newest entry wins).
fn manager_of(managed_fields: &[Value], key: &str) -> Option<String> {
    let field = format!("f:{key}");
    managed_fields
        .iter()
        .filter(|e| {
            e["fieldsV1"]["f:metadata"]["f:annotations"]
                .get(&field)
                .is_some()
        })
        .max_by_key(|e| e["time"].as_str().unwrap_or_default().to_owned())
        .and_then(|e| e["manager"].as_str())
        .map(str::to_owned)
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Judges a request not handled before.
pub fn judge(req: &Request, j: &Judge<'_>) -> Handled {
    let mut h = Handled {
        requested_at: req.requested_at.clone(),
        reason: req.reason.clone(),
        requested_by: req.requested_by.clone(),
        ..Handled::default()
    };
    let what = req.action.as_str();
    let at = match DateTime::parse_from_rfc3339(&req.requested_at) {
        Ok(t) => t.to_utc(),
        Err(e) => {
            h.message = format!(
                "{what} request ignored: '{}' is not an RFC 3339 time (e.g. $(date -u +%FT%TZ)): {e}",
                req.requested_at
            );
            return h;
        }
    };
    if at > j.now + CLOCK_SKEW {
        h.message = format!(
            "{what} request ignored: requested at {} is in the future (spoke time {})",
            rfc3339(at),
            rfc3339(j.now)
        );
        return h;
    }
    if let Some(last) = j.last_transition
        && at < last
    {
        h.message = format!(
            "{what} request ignored: requested at {} is older than the gate's last transition at {}",
            rfc3339(at),
            rfc3339(last)
        );
        return h;
    }
    // Approval is given at the hub by other people; the cluster cannot wait for it
    // (a spoke may be cut off), so such a request is refused here, with the way to ask.
    // Closing stays allowed unless the gate asks approval for closing too.
    if j.spec.needs_approval(req.action.state()) {
        h.message = format!(
            "{what} request ignored: gate {} requires approval for {} overrides (spec.approval), which cannot be given in the cluster; ask at the hub: fleetgate gate {what} {} --for 1h --reason ...",
            j.gate,
            req.action.state(),
            j.gate
        );
        return h;
    }
    if !j
        .spec
        .allows_local_request(req.action == Action::Open, j.from_hub)
    {
        let origin = if j.from_hub {
            "this gate comes from the hub"
        } else {
            "this gate"
        };
        h.message = format!(
            "{what} request ignored: {origin} does not allow {what} requests from the cluster (spec.localRequests.{what})"
        );
        return h;
    }
    let window = j.spec.request_window();
    let until = at + window;
    h.accepted = true;
    h.expires_at = Some(rfc3339(until));
    let by = if req.requested_by.is_empty() {
        String::new()
    } else {
        format!(" by {}", req.requested_by)
    };
    h.message = format!(
        "{what} requested{by} at {} for {} (until {})",
        rfc3339(at),
        fleetgate_policy::format_duration(window),
        rfc3339(until)
    );
    h
}

/// The override an accepted request stands for. It starts and is created at the
/// request's time, so the newest of the cluster's and the hub's overrides wins.
pub fn to_override(gate: &str, action: Action, h: &Handled) -> Option<Override> {
    if !h.accepted || h.cancelled {
        return None;
    }
    let at = DateTime::parse_from_rfc3339(&h.requested_at).ok()?.to_utc();
    let expires = h
        .expires_at
        .as_deref()
        .and_then(|e| DateTime::parse_from_rfc3339(e).ok())
        .map(|e| e.to_utc());
    Some(Override {
        id: format!("{LOCAL_ID_PREFIX}{}:{}", action.as_str(), h.requested_at),
        gate: gate.to_owned(),
        state: action.state(),
        // Active from the request on; a request stamped slightly ahead (the
        // person's clock) is active at once rather than seconds later.
        starts_at: at - CLOCK_SKEW,
        expires_at: expires,
        created_at: at,
        actor: if h.requested_by.is_empty() {
            "the cluster".to_owned()
        } else {
            h.requested_by.clone()
        },
        reason: h.reason.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetgate_policy::parse_gate;
    use serde_json::json;

    fn spec(extra: &str) -> GateSpec {
        parse_gate(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: g}}\nspec:\n  clusters: {{selector: {{}}}}\n{extra}"
        ))
        .unwrap()
        .spec
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    fn req(action: Action, t: &str) -> Request {
        Request {
            action,
            requested_at: t.into(),
            reason: "CHG-1".into(),
            requested_by: "alice".into(),
        }
    }

    #[test]
    fn reads_annotations_and_the_manager_that_set_them() {
        let annotations = BTreeMap::from([
            (
                OPEN_REQUESTED_AT.to_owned(),
                "2026-11-24T10:00:00Z".to_owned(),
            ),
            (OPEN_REASON.to_owned(), "CHG-1".to_owned()),
        ]);
        let managed = vec![
            json!({"manager": "flux", "time": "2026-11-24T09:00:00Z",
                   "fieldsV1": {"f:spec": {}}}),
            json!({"manager": "kubectl-annotate", "time": "2026-11-24T10:00:01Z",
                   "fieldsV1": {"f:metadata": {"f:annotations": {"f:open.gate.fleetgate.io/requestedAt": {}}}}}),
        ];
        let reqs = read(&annotations, &managed);
        assert_eq!(
            reqs,
            vec![Request {
                action: Action::Open,
                requested_at: "2026-11-24T10:00:00Z".into(),
                reason: "CHG-1".into(),
                requested_by: "kubectl-annotate".into(),
            }]
        );
    }

    #[test]
    fn a_gate_with_approval_refuses_open_requests_and_keeps_closing() {
        let now = at("2026-11-24T10:00:30Z");
        let s = spec("  approval: {approvers: 1}\n  localRequests: {open: true}\n");
        let j = Judge {
            gate: "g",
            spec: &s,
            from_hub: false,
            last_transition: None,
            now,
        };
        let open = judge(&req(Action::Open, "2026-11-24T10:00:00Z"), &j);
        assert!(!open.accepted);
        assert!(
            open.message.contains("requires approval") && open.message.contains("spec.approval"),
            "{}",
            open.message
        );
        assert!(to_override("g", Action::Open, &open).is_none());
        assert!(judge(&req(Action::Close, "2026-11-24T10:00:00Z"), &j).accepted);
    }

    #[test]
    fn judging_requests() {
        let now = at("2026-11-24T10:00:30Z");
        let s = spec("  default: closed\n  window: 1h\n");
        let j = |from_hub, last| Judge {
            gate: "g",
            spec: &s,
            from_hub,
            last_transition: last,
            now,
        };
        let ok = judge(&req(Action::Open, "2026-11-24T10:00:00Z"), &j(false, None));
        assert!(ok.accepted, "{}", ok.message);
        assert_eq!(ok.expires_at.as_deref(), Some("2026-11-24T11:00:00Z"));
        assert_eq!(
            ok.message,
            "open requested by alice at 2026-11-24T10:00:00Z for 1h (until 2026-11-24T11:00:00Z)"
        );
        let o = to_override("g", Action::Open, &ok).unwrap();
        assert_eq!(
            (o.state, o.created_at, o.expires_at),
            (
                GateState::Open,
                at("2026-11-24T10:00:00Z"),
                Some(at("2026-11-24T11:00:00Z"))
            )
        );
        assert!(o.id.starts_with(LOCAL_ID_PREFIX));

        let hub = judge(&req(Action::Open, "2026-11-24T10:00:00Z"), &j(true, None));
        assert!(!hub.accepted);
        assert!(
            hub.message.contains("spec.localRequests.open"),
            "{}",
            hub.message
        );
        assert!(to_override("g", Action::Open, &hub).is_none());
        assert!(judge(&req(Action::Close, "2026-11-24T10:00:00Z"), &j(true, None)).accepted);

        let future = judge(&req(Action::Close, "2026-11-24T10:05:00Z"), &j(false, None));
        assert!(!future.accepted && future.message.contains("in the future"));
        let old = judge(
            &req(Action::Close, "2026-11-24T09:00:00Z"),
            &j(false, Some(at("2026-11-24T09:30:00Z"))),
        );
        assert!(
            !old.accepted
                && old
                    .message
                    .contains("older than the gate's last transition")
        );
        let bad = judge(&req(Action::Close, "yesterday"), &j(false, None));
        assert!(!bad.accepted && bad.message.contains("not an RFC 3339 time"));
    }
}
