//! A token naming an unknown `kid` makes the hub fetch the issuer's keys
//! again at most once per `jwksMinRefetch`, against the real OpenID provider
//! (npm `oidc-provider`): forged `kid`s cannot make the hub hammer it, and a
//! genuine key rotation is picked up once the interval has passed.

use std::time::{Duration, Instant};

use fleetgate_api_types::IdentityKind;
use fleetgate_hub::egress::EgressPolicy;
use fleetgate_hub::identity::config::ClaimMapping;
use fleetgate_hub::identity::jwt::{JwtError, JwtVerifier, Trusted};
use fleetgate_hub::identity::keys::KeyCache;
use fleetgate_hub::identity::metrics::{IdentityMetrics, OutcomeLabels};
use fleetgate_hub::identity::outbound::Outbound;
use fleetgate_tests::oidc::OidcProvider;
use serde_json::json;

const MIN_REFETCH: Duration = Duration::from_secs(2);

fn fetches(m: &IdentityMetrics) -> u64 {
    m.jwks
        .get_or_create(&OutcomeLabels {
            outcome: "ok".into(),
        })
        .get()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_kids_refetch_at_most_once_per_interval() {
    tokio::time::timeout(Duration::from_secs(60), async {
        fleetgate_hub::identity::crypto::install();
        let idp = OidcProvider::start().await;
        let metrics = IdentityMetrics::default();
        let outbound = Outbound::new(EgressPolicy {
            allow_private: true,
            allow_http: true,
            ..EgressPolicy::default()
        })
        .unwrap();
        let jwt = JwtVerifier::new(
            vec![Trusted {
                issuer: idp.issuer.clone(),
                audiences: vec!["fleetgate".into()],
                claims: ClaimMapping::default(),
                kind: IdentityKind::Person,
                keys: KeyCache::new(
                    idp.issuer.clone(),
                    None,
                    MIN_REFETCH,
                    outbound,
                    metrics.clone(),
                ),
            }],
            Duration::from_secs(60),
            metrics.clone(),
        );
        let claims = json!({"sub": "alice", "aud": "fleetgate"});
        let now = || chrono::Utc::now();

        let good = idp.mint(claims.clone(), None).await;
        let mut forged = Vec::new();
        for i in 0..20 {
            forged.push(idp.mint(claims.clone(), Some(&format!("forged-{i}"))).await);
        }
        // The first token fetches the keys (discovery, then the JWKS).
        jwt.verify(&good, now()).await.expect("valid token");
        assert_eq!(fetches(&metrics), 1);
        let first = Instant::now();

        // Twenty forged kids: refused, and at most one fetch per interval
        // (none, unless this machine took longer than the interval).
        for token in &forged {
            let err = jwt.verify(token, now()).await.unwrap_err();
            assert_eq!(err, JwtError::UnknownKey(idp.issuer.clone()));
        }
        let intervals = first.elapsed().as_nanos() / MIN_REFETCH.as_nanos();
        assert!(
            fetches(&metrics) <= 1 + u64::try_from(intervals).unwrap(),
            "{} fetches in {:?}",
            fetches(&metrics),
            first.elapsed()
        );
        // The provider rotates: a token under the new key is refused too while
        // the interval lasts (the price of the limit), the cached key still works.
        idp.rotate().await;
        let rotated = idp.mint(claims.clone(), None).await;
        let refused = jwt.verify(&rotated, now()).await;
        if first.elapsed() < MIN_REFETCH {
            assert_eq!(
                refused.unwrap_err(),
                JwtError::UnknownKey(idp.issuer.clone())
            );
            assert_eq!(
                fetches(&metrics),
                1,
                "a forged or new kid fetched within the interval"
            );
            assert!(jwt.verify(&good, now()).await.is_ok());
        }

        // Once the interval has passed, one unknown kid fetches again and the
        // new key is used; the old one is gone with the provider's JWKS.
        let wait = MIN_REFETCH.saturating_sub(first.elapsed());
        tokio::time::sleep(wait + Duration::from_millis(50)).await;
        jwt.verify(&rotated, now())
            .await
            .expect("the rotated key after the interval");
        assert_eq!(fetches(&metrics), 2);
        assert!(jwt.verify(&good, now()).await.is_err());
        assert_eq!(
            fetches(&metrics),
            2,
            "the retired kid within the new interval"
        );
    })
    .await
    .expect("test timed out");
}
