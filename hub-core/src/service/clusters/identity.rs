//! Clusters whose spokes sign in with the cluster's own identity: the binding given at
//! registration (issuer, exact subject, optional pinned keys), replacing pinned keys,
//! and the check of a spoke's JWT against its cluster's binding. A refusal is counted in
//! `fleetgate_hub_identity_refusals_total{flow="spoke", reason}` and audited as
//! `spoke.refused` with the reason (never the token), rate-limited like refused sign-ins.

use std::time::Instant;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::db::audit::{NewAudit, Who};
use crate::db::clusters::{self, IdentityBinding};
use crate::db::revision::Affected;
use crate::identity::provider::SpokeVerifier;
use crate::identity::refusals::Flow;
use crate::identity::token::{Binding, SpokeRefusal, peek};
use crate::service::types::{Cluster, RegisterCluster, SetClusterJwks};
use crate::service::{Actor, Audit, Role, Service, Written};
use crate::{Error, Result, validate};

/// A spoke signed in with its cluster's JWT.
#[derive(Debug, Clone)]
pub struct SpokeSignIn {
    /// The JWT's `exp`: its stream ends then.
    pub expires: DateTime<Utc>,
    /// The cluster's credential hash, read with the binding the JWT was verified
    /// against.
    pub registration: Vec<u8>,
}

/// The ServiceAccount a spoke runs as unless registered otherwise.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "fleetgate-system/fleetgate-spoke";

/// The audit action of a refused spoke.
pub const SPOKE_REFUSED: &str = "spoke.refused";

/// Longest issuer URL accepted.
const MAX_URI: usize = 2048;

/// Largest pinned JWKS document accepted (serialized), bytes.
const MAX_JWKS: usize = fleetgate_policy::budgets::JWKS_MAX_BYTES;

fn uri_ok(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_URI && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The binding a registration asks for (`None`: a cluster token); errors name the field.
pub fn binding_of(
    req: &RegisterCluster,
    keys: &dyn SpokeVerifier,
) -> Result<Option<IdentityBinding>> {
    let Some(issuer) = &req.issuer else {
        for (field, set) in [
            ("serviceAccount", req.service_account.is_some()),
            ("spiffeId", req.spiffe_id.is_some()),
            ("jwks", req.jwks.is_some()),
        ] {
            if set {
                return Err(Error::invalid(field, "only with issuer"));
            }
        }
        return Ok(None);
    };
    if !uri_ok(issuer) {
        return Err(Error::invalid(
            "issuer",
            "must be a URL of at most 2048 characters without spaces",
        ));
    }
    if req.jwks.is_none() && !issuer.starts_with("https://") && !issuer.starts_with("http://") {
        return Err(Error::invalid(
            "issuer",
            "must be an https:// URL serving /.well-known/openid-configuration (or pin the keys with jwks)",
        ));
    }
    let subject = match (&req.service_account, &req.spiffe_id) {
        (Some(_), Some(_)) => {
            return Err(Error::invalid(
                "spiffeId",
                "give serviceAccount or spiffeId, not both",
            ));
        }
        (None, Some(id)) => {
            validate::spiffe_id("spiffeId", id)?;
            id.clone()
        }
        (sa, None) => {
            let sa = sa.as_deref().unwrap_or(DEFAULT_SERVICE_ACCOUNT);
            let Some((ns, name)) = sa.split_once('/') else {
                return Err(Error::invalid("serviceAccount", "must be NAMESPACE/NAME"));
            };
            validate::dns_label("serviceAccount", ns)?;
            let name_ok = !name.is_empty()
                && name.len() <= 253
                && name
                    .split('.')
                    .all(|part| validate::dns_label("", part).is_ok());
            if !name_ok {
                return Err(Error::invalid(
                    "serviceAccount",
                    "the name must be a DNS-1123 subdomain",
                ));
            }
            format!("system:serviceaccount:{ns}:{name}")
        }
    };
    if let Some(jwks) = &req.jwks {
        check_jwks("jwks", jwks, keys)?;
    }
    Ok(Some(IdentityBinding {
        issuer: issuer.clone(),
        subject,
        jwks: req.jwks.clone(),
    }))
}

/// A JWKS document with at least one usable signature key (as `keys` reads it), within
/// the size cap.
pub fn check_jwks(field: &str, jwks: &Value, keys: &dyn SpokeVerifier) -> Result<()> {
    if jwks.to_string().len() > MAX_JWKS {
        return Err(Error::invalid(field, "larger than 64 KiB"));
    }
    let usable = keys
        .usable_keys(jwks)
        .map_err(|e| Error::invalid(field, format!("not a JWKS document: {e}")))?;
    if !usable {
        return Err(Error::invalid(
            field,
            "holds no usable signature key (RSA, EC or OKP public keys)",
        ));
    }
    Ok(())
}

/// The `kid`s of a JWKS document, for audit entries.
fn kids(jwks: Option<&Value>) -> Value {
    let kids: Vec<&Value> = jwks
        .and_then(|j| j["keys"].as_array())
        .map(|keys| keys.iter().map(|k| &k["kid"]).collect())
        .unwrap_or_default();
    json!(kids)
}

impl Service {
    /// Replaces the pinned keys of a cluster registered with an issuer (admin); `None`
    /// goes back to discovery. The cluster's open streams end at once (its credential hash
    /// is replaced, see `clusters::identity_with_hash`): the spoke reconnects and is
    /// verified against the new keys.
    pub async fn set_cluster_jwks(
        &self,
        actor: &Actor,
        name: &str,
        req: SetClusterJwks,
        reason: Option<&str>,
    ) -> Result<Cluster> {
        actor.require_unscoped(Role::Admin)?;
        validate::optional_reason("reason", reason)?;
        if let Some(jwks) = &req.jwks {
            check_jwks("jwks", jwks, self.spoke_issuers())?;
        }
        let now = self.now();
        let jwks = req.jwks.as_ref();
        let hash = &crate::auth::hash_token(&crate::auth::generate_token(
            crate::auth::SPOKE_TOKEN_PREFIX,
        ));
        let (row, rev) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    clusters::get_for_update(tx, name, now)
                        .await?
                        .ok_or_else(|| Error::not_found("cluster", name))?;
                    let Some(old) = clusters::identity(tx, name).await?.flatten() else {
                        return Err(Error::invalid(
                            "name",
                            format!("cluster '{name}' signs in with a cluster token, not an issuer's keys"),
                        ));
                    };
                    let row = clusters::set_jwks(tx, name, jwks, hash, now).await?;
                    let audit = Audit {
                        action: "cluster.set_jwks",
                        target_kind: "cluster",
                        target_name: name.into(),
                        before: Some(json!({"issuer": old.issuer, "kids": kids(old.jwks.as_ref())})),
                        after: Some(json!({"issuer": old.issuer, "kids": kids(jwks)})),
                        reason: reason.map(Into::into),
                    };
                    Ok(Written::changed(row, audit, Affected::Clusters(vec![name.into()])))
                })
            })
            .await?;
        Ok(Cluster {
            desired_revision: rev,
            ..row
        })
    }

    /// Checks a spoke's JWT against the binding of the cluster it names (its
    /// `fleetgate-cluster` metadata); answers when the token expires and the cluster's
    /// credential hash read with the binding (its stream ends when a snapshot carries
    /// another). Every refusal is `Unauthenticated`, counted and audited.
    pub async fn authenticate_spoke_jwt(&self, cluster: &str, token: &str) -> Result<SpokeSignIn> {
        let found = {
            let mut conn = self.conn().await?;
            clusters::identity_with_hash(&mut conn, cluster).await?
        };
        self.verify_spoke_jwt(cluster, token, found).await
    }

    /// [`Service::authenticate_spoke_jwt`] with the cluster's binding already read
    /// (`found`, as [`clusters::identity_with_hash`] answers it; batched by `SpokeAuth`).
    pub async fn verify_spoke_jwt(
        &self,
        cluster: &str,
        token: &str,
        found: Option<(Option<IdentityBinding>, Vec<u8>)>,
    ) -> Result<SpokeSignIn> {
        let (found, registration) = match found {
            Some((binding, hash)) => (Some(binding), hash),
            None => (None, Vec::new()),
        };
        let binding = match found {
            None => {
                let r =
                    SpokeRefusal::new("unknown_cluster", format!("no cluster named '{cluster}'"));
                return Err(self.refuse_spoke(cluster, token, r).await);
            }
            Some(None) => {
                let r = SpokeRefusal::new(
                    "token_cluster",
                    format!(
                        "cluster '{cluster}' is registered with a cluster token, not an issuer"
                    ),
                );
                return Err(self.refuse_spoke(cluster, token, r).await);
            }
            Some(Some(b)) => Binding {
                issuer: b.issuer,
                subject: b.subject,
                jwks: b.jwks,
            },
        };
        match self
            .spoke_issuers()
            .verify(&binding, token, self.now())
            .await
        {
            Ok(expires) => Ok(SpokeSignIn {
                expires,
                registration,
            }),
            Err(r) => Err(self.refuse_spoke(cluster, token, r).await),
        }
    }

    /// The cluster's credential hash now (`None`: no such cluster), for a stream whose
    /// snapshot did not carry it.
    pub async fn spoke_credential_hash(&self, cluster: &str) -> Result<Option<Vec<u8>>> {
        let mut conn = self.conn().await?;
        clusters::credential_hash(&mut conn, cluster).await
    }

    /// Counts and audits a refused spoke (at most once a minute per cluster and reason
    /// per replica); answers the caller's `Unauthenticated`.
    pub(crate) async fn refuse_spoke(&self, cluster: &str, token: &str, r: SpokeRefusal) -> Error {
        let ids = self.identities();
        ids.metrics.refusal(Flow::Spoke.as_str(), r.reason);
        tracing::info!(%cluster, reason = r.reason, message = %r.message, "spoke refused");
        let error = Error::Unauthenticated(r.message.clone());
        let key = (Flow::Spoke, r.reason, cluster.to_string());
        let Some(suppressed) = ids.refusals.admit(key, Instant::now()) else {
            ids.metrics.refusal_not_audited();
            return error;
        };
        // Who the token claims to be (unverified unless the refusal came after the
        // signature): issuer and subject only, never the token.
        let claimed = peek(token).map(|c| json!({"issuer": c.get("iss"), "subject": c.get("sub")}));
        let entry = NewAudit {
            at: self.now(),
            actor: "anonymous",
            action: SPOKE_REFUSED,
            target_kind: "cluster",
            target_name: cluster,
            before: None,
            after: Some(json!({"reason": r.reason, "claimed": claimed, "suppressed": suppressed})),
            reason: Some(&r.message),
            who: Who::default(),
        };
        let written = match self.conn().await {
            Ok(mut conn) => crate::db::audit::insert(&mut conn, &entry)
                .await
                .map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = written {
            tracing::warn!(error = %e, reason = r.reason, "could not audit a refused spoke");
        }
        error
    }
}
