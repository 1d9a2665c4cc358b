//! A [`Service`] with the default adapters (admission calls under the default egress
//! rules, no identity settings, spokes' JWTs verified for the default audience), for the binary's start-up and for tests and
//! tools that build one: `use fleetgate_hub_adapters::ServiceDefaults` (or the facade's
//! `fleetgate_hub::ServiceDefaults`) and call `Service::new` / `Service::with_clock` as before.

use std::sync::Arc;

use sqlx::PgPool;

use crate::admission::EgressAdmission;
use crate::clock::{Clock, SystemClock};
use crate::egress::EgressPolicy;
use crate::identity::spoke_jwt::SpokeIssuers;
use crate::service::{Adapters, Service};

/// Constructors of [`Service`] that wire the default adapters.
pub trait ServiceDefaults: Sized {
    /// A service on `pool` using the system clock.
    fn new(pool: PgPool) -> Self;
    /// A service with an injected clock (tests).
    fn with_clock(pool: PgPool, clock: Arc<dyn Clock>) -> Self;
    /// This service calling admission webhooks under `policy`.
    fn with_admission_egress(self, policy: EgressPolicy) -> Self;
}

impl ServiceDefaults for Service {
    fn new(pool: PgPool) -> Self {
        <Self as ServiceDefaults>::with_clock(pool, Arc::new(SystemClock))
    }

    fn with_clock(pool: PgPool, clock: Arc<dyn Clock>) -> Self {
        Service::with_adapters(
            pool,
            clock,
            Adapters {
                admission: Arc::new(EgressAdmission::default()),
                identities: Arc::new(crate::identity::no_settings()),
                spoke_issuers: Arc::new(SpokeIssuers::default()),
            },
        )
    }

    fn with_admission_egress(self, policy: EgressPolicy) -> Self {
        self.with_admission(Arc::new(EgressAdmission::new(policy)))
    }
}
