//! Identity metrics: `fleetgate_hub_identity_logins_total{flow,outcome}`,
//! `fleetgate_hub_identity_jwt_validations_total{outcome}`,
//! `fleetgate_hub_identity_jwks_fetches_total{outcome}`,
//! `fleetgate_hub_identity_refusals_total{flow,reason}`,
//! `fleetgate_hub_identity_refusals_not_audited_total` and
//! `fleetgate_hub_identity_session_refreshes_total{outcome}`.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LoginLabels {
    /// `dashboard`.
    pub flow: String,
    /// `ok`, `denied`, `provider_error`, `invalid`.
    pub outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// `dashboard`, `refresh` or `bearer`.
    pub flow: String,
    /// Why (see `refusals::Refusal`).
    pub reason: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: String,
}

/// The identity counters. Cheap to clone (shared cells).
#[derive(Debug, Clone, Default)]
pub struct IdentityMetrics {
    pub logins: Family<LoginLabels, Counter>,
    pub jwt: Family<OutcomeLabels, Counter>,
    pub jwks: Family<OutcomeLabels, Counter>,
    pub refusals: Family<RefusalLabels, Counter>,
    pub refusals_not_audited: Counter,
    pub session_refreshes: Family<OutcomeLabels, Counter>,
}

impl IdentityMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "identity_logins",
            "Dashboard sign-ins through the OpenID provider, by outcome",
            self.logins.clone(),
        );
        registry.register(
            "identity_jwt_validations",
            "Bearer JWTs checked, by outcome (ok, expired, bad_signature, wrong_audience, untrusted_issuer, ...)",
            self.jwt.clone(),
        );
        registry.register(
            "identity_jwks_fetches",
            "Signing-key fetches from providers, by outcome",
            self.jwks.clone(),
        );
        registry.register(
            "identity_refusals",
            "Refused sign-ins (dashboard, session refresh, bearer JWT), by flow and reason",
            self.refusals.clone(),
        );
        registry.register(
            "identity_refusals_not_audited",
            "Refused sign-ins left out of the audit log by its rate limit",
            self.refusals_not_audited.clone(),
        );
        registry.register(
            "identity_session_refreshes",
            "Dashboard sessions refreshed at the provider, by outcome (ok; refused: the session ended; unavailable: the provider could not be asked; invalid: its answer was refused, the session ended)",
            self.session_refreshes.clone(),
        );
    }

    pub fn refusal(&self, flow: &str, reason: &str) {
        self.refusals
            .get_or_create(&RefusalLabels {
                flow: flow.into(),
                reason: reason.into(),
            })
            .inc();
    }

    pub fn refusal_not_audited(&self) {
        self.refusals_not_audited.inc();
    }

    pub fn login(&self, flow: &str, outcome: &str) {
        self.logins
            .get_or_create(&LoginLabels {
                flow: flow.into(),
                outcome: outcome.into(),
            })
            .inc();
    }

    pub fn jwt(&self, outcome: &str) {
        self.jwt
            .get_or_create(&OutcomeLabels {
                outcome: outcome.into(),
            })
            .inc();
    }

    pub fn session_refresh(&self, outcome: &str) {
        self.session_refreshes
            .get_or_create(&OutcomeLabels {
                outcome: outcome.into(),
            })
            .inc();
    }

    pub fn jwks_fetch(&self, outcome: &str) {
        self.jwks
            .get_or_create(&OutcomeLabels {
                outcome: outcome.into(),
            })
            .inc();
    }
}
