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

use super::provider::TokenVerifier;
use super::token::{JwtError, identity_of, peek};
use crate::Error;

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
    /// A spoke's own JWT (a cluster registered with an issuer; audited as `spoke.refused`).
    Spoke,
}

impl Flow {
    pub fn as_str(self) -> &'static str {
        match self {
            Flow::Dashboard => "dashboard",
            Flow::Refresh => "refresh",
            Flow::Bearer => "bearer",
            Flow::Spoke => "spoke",
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
    pub fn jwt(
        flow: Flow,
        jwt: &dyn TokenVerifier,
        token: &str,
        e: JwtError,
        error: Error,
    ) -> Self {
        let verified = matches!(
            e,
            JwtError::Expired | JwtError::NotYetValid | JwtError::WrongAudience
        );
        Self::new(flow, e.outcome(), error).by(claimed(jwt, token), verified)
    }

    /// The `identity_logins` outcome of a dashboard refusal.
    pub(crate) fn login_outcome(&self) -> &'static str {
        match self.reason {
            "provider_error" | "token_exchange" => "provider_error",
            "no_role" => "denied",
            _ => "invalid",
        }
    }
}

/// Who an unverified token says it is (nothing when it does not parse).
fn claimed(jwt: &dyn TokenVerifier, token: &str) -> Option<Identity> {
    let claims = peek(token)?;
    let iss = claims.get("iss")?.as_str()?;
    let (kind, mapping) = match jwt.issuer(iss) {
        Some(found) => found,
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

/// The audit's word for an identity's kind.
pub(crate) fn kind(k: IdentityKind) -> &'static str {
    match k {
        IdentityKind::Person => "person",
        IdentityKind::Workload => "workload",
    }
}

/// At most [`MAX_TEXT`] characters of text someone else chose.
pub(crate) fn clip(s: &str) -> String {
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
