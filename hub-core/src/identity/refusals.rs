//! Refused sign-ins. Every refusal (a dashboard sign-in, a session refresh
//! or a bearer JWT) counts in `fleetgate_hub_identity_refusals_total{flow,
//! reason}` and is audited as `sign_in.refused`: why, and who where that is
//! known (a signature the provider made vouches for it; otherwise the
//! claimed name is kept apart as `claimed`), never the token. A flood must
//! not fill the audit log, so each replica writes at most one entry per
//! (flow, reason, subject) a minute and [`AUDITS_PER_MINUTE`] in all; the
//! next entry of a key says how many of its refusals were not written.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fleetgate_api_types::{Identity, IdentityKind};
use serde_json::json;

use super::jwt::{JwtError, JwtVerifier, identity_of};
use crate::Error;
use crate::db::audit::{NewAudit, Who};
use crate::service::Service;

/// The audit action of a refusal.
pub const REFUSED_ACTION: &str = "sign_in.refused";
/// How often one (flow, reason, subject) is audited at most.
pub const PER_KEY: Duration = Duration::from_secs(60);
/// How many refusals a replica audits a minute at most, across keys.
pub const AUDITS_PER_MINUTE: u32 = 60;
/// How many keys the limiter remembers (a flood of made-up subjects
/// must not grow it without bound).
const MAX_KEYS: usize = 10_000;
/// Longest provider-supplied text kept in an entry.
const MAX_TEXT: usize = 300;

/// Where a refusal happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flow {
    /// The dashboard's sign-in callback.
    Dashboard,
    /// A session's refresh at the provider.
    Refresh,
    /// A bearer JWT on REST or gRPC.
    Bearer,
}

impl Flow {
    pub fn as_str(self) -> &'static str {
        match self {
            Flow::Dashboard => "dashboard",
            Flow::Refresh => "refresh",
            Flow::Bearer => "bearer",
        }
    }
}

/// One refused sign-in: where, why (a metrics label: `state`, `nonce`,
/// `provider_error`, `token_exchange`, `no_id_token`, `no_role`,
/// `refresh_refused`, `callback`, or a JWT outcome such as `expired`), the
/// error the caller gets, and who, with whether that is verified.
#[derive(Debug)]
pub struct Refusal {
    pub flow: Flow,
    pub reason: &'static str,
    pub error: Error,
    pub who: Option<(Identity, bool)>,
}

impl Refusal {
    pub fn new(flow: Flow, reason: &'static str, error: Error) -> Self {
        Self {
            flow,
            reason,
            error,
            who: None,
        }
    }

    /// Who it was, verified by the provider's signature or only claimed.
    pub fn by(mut self, who: Option<Identity>, verified: bool) -> Self {
        self.who = who.map(|w| (w, verified));
        self
    }

    /// A JWT refused by `jwt`, naming who it claims to be (verified when the
    /// signature checked out and a claim failed: expiry, audience, `nbf`).
    pub fn jwt(flow: Flow, jwt: &JwtVerifier, token: &str, e: JwtError, error: Error) -> Self {
        let verified = matches!(
            e,
            JwtError::Expired | JwtError::NotYetValid | JwtError::WrongAudience
        );
        Self::new(flow, e.outcome(), error).by(claimed(jwt, token), verified)
    }

    /// The `identity_logins` outcome of a dashboard refusal.
    fn login_outcome(&self) -> &'static str {
        match self.reason {
            "provider_error" | "token_exchange" => "provider_error",
            "no_role" => "denied",
            _ => "invalid",
        }
    }
}

/// Who an unverified token says it is (nothing when it does not parse).
fn claimed(jwt: &JwtVerifier, token: &str) -> Option<Identity> {
    let claims: serde_json::Map<String, serde_json::Value> =
        jsonwebtoken::dangerous::insecure_decode_claims(token).ok()?;
    let iss = claims.get("iss")?.as_str()?;
    let (kind, mapping) = match jwt.issuer(iss) {
        Some(t) => (t.kind, t.claims.clone()),
        None => (IdentityKind::Person, Default::default()),
    };
    identity_of(iss, kind, &mapping, &claims).ok()
}

/// Which refusals of this replica get an audit entry.
#[derive(Debug, Default)]
pub struct RefusalLimiter(Mutex<Limits>);

#[derive(Debug, Default)]
struct Limits {
    keys: HashMap<(Flow, &'static str, String), Slot>,
    window: Option<Instant>,
    in_window: u32,
}

#[derive(Debug, Default)]
struct Slot {
    last: Option<Instant>,
    suppressed: u64,
}

impl RefusalLimiter {
    /// Whether to audit a refusal of `key` at `now`: `Some(n)` with the `n`
    /// refusals of this key not audited since its last entry, or `None`.
    pub fn admit(&self, key: (Flow, &'static str, String), now: Instant) -> Option<u64> {
        let mut l = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if l.window.is_none_or(|w| now.duration_since(w) >= PER_KEY) {
            l.window = Some(now);
            l.in_window = 0;
        }
        if l.keys.len() >= MAX_KEYS {
            l.keys
                .retain(|_, s| s.last.is_some_and(|t| now.duration_since(t) < PER_KEY));
        }
        let full = l.in_window >= AUDITS_PER_MINUTE;
        let known = l.keys.len() < MAX_KEYS || l.keys.contains_key(&key);
        if !known {
            return None;
        }
        let slot = l.keys.entry(key).or_default();
        if full || slot.last.is_some_and(|t| now.duration_since(t) < PER_KEY) {
            slot.suppressed += 1;
            return None;
        }
        slot.last = Some(now);
        let n = std::mem::take(&mut slot.suppressed);
        l.in_window += 1;
        Some(n)
    }
}

impl Service {
    /// Records `r` (metrics, and the audit log within the limits) and
    /// answers the caller's error. An audit write that fails is logged: the
    /// caller is refused either way.
    pub async fn refuse(&self, r: Refusal) -> Error {
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

fn kind(k: IdentityKind) -> &'static str {
    match k {
        IdentityKind::Person => "person",
        IdentityKind::Workload => "workload",
    }
}

/// At most [`MAX_TEXT`] characters of text someone else chose.
fn clip(s: &str) -> String {
    match s.char_indices().nth(MAX_TEXT) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(reason: &'static str, sub: &str) -> (Flow, &'static str, String) {
        (Flow::Bearer, reason, sub.to_string())
    }

    #[test]
    fn one_entry_per_key_a_minute_then_the_count_of_the_rest() {
        let l = RefusalLimiter::default();
        let t0 = Instant::now();
        assert_eq!(l.admit(key("expired", "alice"), t0), Some(0));
        for s in 1..=3 {
            assert_eq!(
                l.admit(key("expired", "alice"), t0 + Duration::from_secs(s)),
                None
            );
        }
        // Another reason or person is its own key.
        assert_eq!(l.admit(key("wrong_audience", "alice"), t0), Some(0));
        assert_eq!(l.admit(key("expired", "bob"), t0), Some(0));
        assert_eq!(
            l.admit(key("expired", "alice"), t0 + PER_KEY),
            Some(3),
            "the next entry says how many were not written"
        );
    }

    #[test]
    fn a_flood_of_made_up_subjects_is_capped_per_minute() {
        let l = RefusalLimiter::default();
        let t0 = Instant::now();
        let admitted = (0..1000)
            .filter(|i| {
                l.admit(key("bad_signature", &format!("s{i}")), t0)
                    .is_some()
            })
            .count();
        assert_eq!(admitted, AUDITS_PER_MINUTE as usize);
        // The next minute admits again.
        assert!(
            l.admit(key("bad_signature", "s999"), t0 + PER_KEY)
                .is_some()
        );
    }

    #[test]
    fn the_limiter_remembers_a_bounded_number_of_keys() {
        let l = RefusalLimiter::default();
        let t0 = Instant::now();
        for i in 0..(MAX_KEYS + 500) {
            l.admit(key("bad_signature", &format!("s{i}")), t0);
        }
        assert!(l.0.lock().unwrap().keys.len() <= MAX_KEYS);
    }

    #[test]
    fn long_text_is_clipped() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(MAX_TEXT + 10);
        assert_eq!(clip(&long).chars().count(), MAX_TEXT + 1);
    }
}
