//! Recording a refused sign-in ([`Service::refuse`]): the metrics and, within the limits of
//! `identity::refusals`, the `sign_in.refused` audit entry. Service-level code: the identity
//! model (`identity::refusals`) knows nothing of the service.

use std::time::Instant;

use fleetgate_api_types::Identity;
use serde_json::json;

use crate::Error;
use crate::db::audit::{NewAudit, Who};
use crate::identity::refusals::{Flow, REFUSED_ACTION, Refusal, clip, kind};
use crate::service::Service;

impl Service {
    /// Records `r` (metrics, and the audit log within the limits) and
    /// answers the caller's error. An audit write that fails is logged: the
    /// caller is refused either way.
    pub(crate) async fn refuse(&self, r: Refusal) -> Error {
        let ids = self.identities();
        ids.metrics.refusal(r.flow.as_str(), r.reason);
        if r.flow == Flow::Dashboard {
            ids.metrics.login("dashboard", r.login_outcome());
        }
        let subject = r
            .who
            .as_ref()
            .map(|(w, _)| format!("{}\0{}", w.issuer, w.subject))
            .unwrap_or_default();
        let Some(suppressed) = ids
            .refusals
            .admit((r.flow, r.reason, subject), Instant::now())
        else {
            ids.metrics.refusal_not_audited();
            return r.error;
        };
        let message = clip(&r.error.public_message());
        let (actor, target, who) = match &r.who {
            Some((w, true)) => (
                w.email.clone().unwrap_or_else(|| w.name.clone()),
                w.audit_name(),
                Who {
                    kind: Some(kind(w.kind).into()),
                    issuer: Some(w.issuer.clone()),
                    subject: Some(w.subject.clone()),
                    email: w.email.clone(),
                    groups: Some(w.groups.clone()),
                    ..Who::default()
                },
            ),
            Some((w, false)) => (
                "anonymous".to_string(),
                format!("claimed: {}", clip(&w.audit_name())),
                Who::default(),
            ),
            None => (
                "anonymous".to_string(),
                "unknown".to_string(),
                Who::default(),
            ),
        };
        let person = |w: &Identity| {
            json!({
                "kind": kind(w.kind), "issuer": clip(&w.issuer), "subject": clip(&w.subject),
                "name": clip(&w.name), "email": w.email.as_deref().map(clip), "groups": w.groups,
            })
        };
        let mut after = json!({
            "flow": r.flow.as_str(),
            "reason": r.reason,
            "suppressed": suppressed,
        });
        match &r.who {
            Some((w, true)) => after["identity"] = person(w),
            Some((w, false)) => after["claimed"] = person(w),
            None => {}
        }
        let entry = NewAudit {
            at: self.now(),
            actor: &actor,
            action: REFUSED_ACTION,
            target_kind: "identity",
            target_name: &target,
            before: None,
            after: Some(after),
            reason: Some(&message),
            who,
        };
        let written = match self.conn().await {
            Ok(mut conn) => crate::db::audit::insert(&mut conn, &entry)
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, reason = r.reason, "could not audit a refused sign-in");
        }
        r.error
    }
}
