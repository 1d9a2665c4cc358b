//! Access benchmarks (ignored; they print numbers and assert nothing about
//! time):
//! - bearer JWT validation against the real OpenID provider (npm
//!   `oidc-provider`, RS256): with the keys cached (`verify_cached`, and
//!   `verify`, which only goes to the network for an unknown `kid`) versus
//!   cold (a fresh key cache per token: discovery-free JWKS fetch, then the
//!   check), what every request would cost without the cache;
//! - fleet reads at 10,000 clusters (fleet status, the WatchFleet/SSE view,
//!   the dashboard grid, a page of clusters) by an unscoped token, a token
//!   scoped to one team (1,000 clusters, 2 of 22 gates) and a token whose
//!   scope covers everything (the scope check's own cost), interleaved in
//!   one run so they share the machine's noise.
//!
//! `cargo test --workspace --test access_bench -- --ignored --nocapture --test-threads 1`

mod common;

use std::time::{Duration, Instant};

use common::Hub;
use fleetgate_api_types::{AccessScope, IdentityKind};
use fleetgate_hub::egress::EgressPolicy;
use fleetgate_hub::identity::config::ClaimMapping;
use fleetgate_hub::identity::jwt::{JwtVerifier, Trusted};
use fleetgate_hub::identity::keys::KeyCache;
use fleetgate_hub::identity::metrics::IdentityMetrics;
use fleetgate_hub::identity::outbound::Outbound;
use fleetgate_hub::service::PageRequest;
use fleetgate_hub::service::types::CreateToken;
use fleetgate_hub::{Actor, Role};
use fleetgate_tests::oidc::OidcProvider;
use serde_json::json;

const CLUSTERS: usize = 10_000;
const TEAMS: usize = 10;
const ROUNDS: usize = 15;

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn verifier(issuer: &str, outbound: &Outbound) -> JwtVerifier {
    let keys = KeyCache::new(
        issuer.to_string(),
        Some(format!("{issuer}/jwks")),
        Duration::ZERO,
        outbound.clone(),
        IdentityMetrics::default(),
    );
    JwtVerifier::new(
        vec![Trusted {
            issuer: issuer.to_string(),
            audiences: vec!["fleetgate".into()],
            claims: ClaimMapping::default(),
            kind: IdentityKind::Person,
            keys,
        }],
        Duration::from_secs(60),
        IdentityMetrics::default(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn jwt_validation_cached_vs_cold() {
    fleetgate_hub::identity::crypto::install();
    let idp = OidcProvider::start().await;
    let token = idp
        .mint(
            json!({"sub": "bench", "aud": "fleetgate", "email": "bench@example.com",
                   "groups": ["platform-admins"]}),
            None,
        )
        .await;
    let outbound = Outbound::new(EgressPolicy {
        allow_private: true,
        allow_http: true,
        ..EgressPolicy::default()
    })
    .unwrap();
    let now = chrono::Utc::now();

    // Cached: one fetch, then every check from the cache.
    let warm = verifier(&idp.issuer, &outbound);
    warm.verify(&token, now).await.expect("valid token");
    let n = 10_000;
    let mut cached = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(warm.verify_cached(&token, now).unwrap());
        cached.push(t.elapsed());
    }
    let mut through_verify = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        std::hint::black_box(warm.verify(&token, now).await.unwrap());
        through_verify.push(t.elapsed());
    }

    // Cold: what each request would cost without the cache.
    let cold_n = 200;
    let mut cold = Vec::with_capacity(cold_n);
    for _ in 0..cold_n {
        let v = verifier(&idp.issuer, &outbound);
        let t = Instant::now();
        std::hint::black_box(v.verify(&token, now).await.unwrap());
        cold.push(t.elapsed());
    }
    let mean = |v: &[Duration]| v.iter().sum::<Duration>() / v.len() as u32;
    let (mc, mv, mk) = (mean(&cached), mean(&through_verify), mean(&cold));
    println!(
        "JWT RS256 (real oidc-provider), verify_cached x{n}: mean {:.1} us, p50 {:.1} us, p99 {:.1} us",
        us(mc),
        us(pct(&mut cached, 0.5)),
        us(pct(&mut cached, 0.99))
    );
    println!(
        "JWT RS256, verify (cached keys) x{n}: mean {:.1} us, p50 {:.1} us, p99 {:.1} us",
        us(mv),
        us(pct(&mut through_verify, 0.5)),
        us(pct(&mut through_verify, 0.99))
    );
    println!(
        "JWT RS256, cold (fresh key cache: JWKS fetch + check) x{cold_n}: mean {:.0} us, p50 {:.0} us, p99 {:.0} us; cold/cached p50 {:.0}x",
        us(mk),
        us(pct(&mut cold, 0.5)),
        us(pct(&mut cold, 0.99)),
        pct(&mut cold, 0.5).as_secs_f64() / pct(&mut cached, 0.5).as_secs_f64()
    );
}

async fn token_actor(hub: &Hub, name: &str, scope: Option<AccessScope>) -> Actor {
    let root = Actor::new("bench", Role::Admin);
    let t = hub
        .service
        .create_token(
            &root,
            CreateToken {
                name: name.into(),
                role: "viewer".into(),
                scope,
            },
            None,
        )
        .await
        .unwrap();
    hub.service.authenticate_api(&t.secret).await.unwrap()
}

fn scope(v: serde_json::Value) -> Option<AccessScope> {
    Some(serde_json::from_value(v).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn scoped_vs_unscoped_fleet_reads_at_10k_clusters() {
    let hub = Hub::new().await;
    sqlx::query(
        "insert into clusters (name, labels, token_hash, created_at) \
         select 'c' || lpad(i::text, 5, '0'), \
                jsonb_build_object('env', 'prod', 'team', 't' || (i % $2)), \
                sha256(i::text::bytea), now() \
         from generate_series(1, $1) i",
    )
    .bind(i32::try_from(CLUSTERS).unwrap())
    .bind(i32::try_from(TEAMS).unwrap())
    .execute(&hub.pool)
    .await
    .unwrap();
    let gate = |name: &str, labels: &str, clusters: &str| {
        format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {name}, labels: {{{labels}}}}}\nspec:\n  \
             clusters: {{selector: {{matchLabels: {{{clusters}}}}}}}\n  default: open\n  timeZone: Europe/Berlin\n  \
             windows:\n    - {{name: friday, kind: deny, schedule: \"0 15 * * FRI\", duration: 63h}}\n"
        )
    };
    for t in 0..TEAMS {
        for g in ["web", "db"] {
            let yaml = gate(
                &format!("t{t}-{g}"),
                &format!("team: t{t}, tier: app"),
                &format!("team: t{t}"),
            );
            assert_eq!(hub.create_gate_yaml(&yaml).await.status, 201);
        }
    }
    for name in ["fleet-a", "fleet-b"] {
        let yaml = gate(name, "tier: fleet", "env: prod");
        assert_eq!(hub.create_gate_yaml(&yaml).await.status, 201);
    }
    let unscoped = token_actor(&hub, "unscoped", None).await;
    let team = token_actor(
        &hub,
        "team-t0",
        scope(
            json!({"clusters": {"selector": {"matchLabels": {"team": "t0"}}},
                     "gates": {"selector": {"matchLabels": {"team": "t0"}}}}),
        ),
    )
    .await;
    let everything = token_actor(
        &hub,
        "scoped-all",
        scope(json!({
            "clusters": {"selector": {"matchExpressions": [{"key": "team", "operator": "Exists"}]}},
            "gates": {"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}}})),
    )
    .await;
    let principals = [
        ("unscoped", &unscoped),
        ("scoped, one team", &team),
        ("scoped, covers all", &everything),
    ];
    let ops = [
        "fleet status",
        "WatchFleet view",
        "dashboard grid",
        "clusters page",
    ];
    // times[principal][op]
    let mut times = vec![vec![Vec::new(); ops.len()]; principals.len()];
    let mut sizes = vec![vec![0usize; ops.len()]; principals.len()];
    let page = PageRequest {
        limit: Some(1000),
        cursor: None,
    };
    for round in 0..=ROUNDS {
        for (p, (_, actor)) in principals.iter().enumerate() {
            for (o, _) in ops.iter().enumerate() {
                let s = &hub.service;
                let t = Instant::now();
                let n = match o {
                    0 => s.fleet_status(actor, None).await.unwrap().clusters.len(),
                    1 => s.fleet_view(actor).await.unwrap().gates.len(),
                    2 => s.fleet_grid(actor).await.unwrap().clusters.len(),
                    _ => s.list_clusters(actor, &page).await.unwrap().items.len(),
                };
                let took = t.elapsed();
                // Round 0 warms caches (policy, scoped clusters) and is not counted.
                if round > 0 {
                    times[p][o].push(took);
                }
                sizes[p][o] = n;
            }
        }
    }
    println!(
        "{CLUSTERS} clusters, {} gates, {ROUNDS} rounds (p99 of {ROUNDS} is the slowest; items: clusters, or gate x cluster pairs for the view):",
        TEAMS * 2 + 2
    );
    for (o, op) in ops.iter().enumerate() {
        let base = pct(&mut times[0][o], 0.99);
        for (p, (who, _)) in principals.iter().enumerate() {
            let p50 = pct(&mut times[p][o], 0.5);
            let p99 = pct(&mut times[p][o], 0.99);
            println!(
                "  {op:<16} {who:<19} {:>6} items  p50 {:>7.1} ms  p99 {:>7.1} ms  p99/unscoped {:.2}",
                sizes[p][o],
                ms(p50),
                ms(p99),
                p99.as_secs_f64() / base.as_secs_f64()
            );
        }
    }
}
