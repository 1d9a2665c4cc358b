//! A scoped reader's fleet read asks PostgreSQL for its share of the clusters (the scope
//! as a `where` clause, `db::scope_sql`) instead of reading the fleet and dropping the
//! rest; what it reads must be exactly what it saw before. Over random fleets and random
//! scopes (names, `matchLabels`, every selector operator, unions of grants):
//! - the store's clusters for a union of cluster scopes are exactly those
//!   `ClusterScope::matches` keeps;
//! - every fleet view of a scoped actor (fleet status, summary, dashboard grid, the change
//!   streams' view, a gate's clusters) is the same as reading the whole fleet and
//!   restricting it (`FleetInputs::restrict`), as every read did before.

mod common;

use std::collections::BTreeMap;

use common::Hub;
use fleetgate_api_types::{AccessScope, GateScope};
use fleetgate_hub::db::clusters;
use fleetgate_hub::service::fleet::{FleetInputs, Scope, grid, status, view};
use fleetgate_hub::service::{Actor, Grant, GrantSource, Identity, Role};
use fleetgate_policy::{ClusterScope, LabelSelector, LabelSelectorRequirement, SelectorOperator};
use serde_json::{Value, json};

/// A small deterministic generator (splitmix64): the same cases every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

const KEYS: [&str; 4] = ["team", "env", "region", "tier"];
const VALUES: [&str; 5] = ["a", "b", "c", "d", "e"];
const FLEET: usize = 160;

fn name(i: usize) -> String {
    format!("c-{i:03}")
}

/// Each cluster gets each key with a random value, or not at all (one in four).
fn labels(rng: &mut Rng) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for k in KEYS {
        if !rng.chance(4) {
            out.insert(k.to_string(), rng.pick(&VALUES).to_string());
        }
    }
    out
}

fn selector(rng: &mut Rng) -> LabelSelector {
    let mut s = LabelSelector::default();
    for _ in 0..rng.below(3) {
        s.match_labels
            .insert(rng.pick(&KEYS).into(), rng.pick(&VALUES).into());
    }
    for _ in 0..rng.below(3) {
        let operator = [
            SelectorOperator::In,
            SelectorOperator::NotIn,
            SelectorOperator::Exists,
            SelectorOperator::DoesNotExist,
        ][rng.below(4)];
        let values = match operator {
            SelectorOperator::In | SelectorOperator::NotIn => (0..1 + rng.below(3))
                .map(|_| rng.pick(&VALUES).to_string())
                .collect(),
            _ => Vec::new(),
        };
        s.match_expressions.push(LabelSelectorRequirement {
            key: rng.pick(&KEYS).into(),
            operator,
            values,
        });
    }
    s
}

fn cluster_scope(rng: &mut Rng) -> ClusterScope {
    let names = if rng.chance(2) {
        (0..rng.below(6))
            .map(|_| name(rng.below(FLEET + 5)))
            .collect()
    } else {
        Vec::new()
    };
    ClusterScope {
        names,
        selector: (!rng.chance(3)).then(|| selector(rng)),
    }
}

/// Registers the random fleet straight into the database; its labels by name.
async fn fleet(hub: &Hub, rng: &mut Rng) -> BTreeMap<String, BTreeMap<String, String>> {
    let all: BTreeMap<String, BTreeMap<String, String>> =
        (0..FLEET).map(|i| (name(i), labels(rng))).collect();
    let names: Vec<&String> = all.keys().collect();
    let labels: Vec<Value> = all.values().map(|l| json!(l)).collect();
    sqlx::query(
        "with c as (insert into clusters (name, labels, token_hash, created_at) \
           select n, l, sha256(convert_to(n, 'UTF8')), now() \
           from unnest($1::text[], $2::jsonb[]) as u(n, l) returning name) \
         insert into cluster_connections (cluster) select name from c",
    )
    .bind(&names)
    .bind(&labels)
    .execute(&hub.pool)
    .await
    .unwrap();
    all
}

#[tokio::test]
async fn the_store_reads_exactly_the_clusters_a_union_of_scopes_matches() {
    let hub = Hub::new().await;
    let mut rng = Rng(0x5ca1_ab1e);
    let all = fleet(&hub, &mut rng).await;
    let mut conn = hub.pool.acquire().await.unwrap();
    let mut nonempty = 0;
    for case in 0..300 {
        let scopes: Vec<ClusterScope> =
            (0..rng.below(4)).map(|_| cluster_scope(&mut rng)).collect();
        let want: Vec<&String> = all
            .iter()
            .filter(|(n, l)| scopes.iter().any(|s| s.matches(n, l)))
            .map(|(n, _)| n)
            .collect();
        let got = clusters::with_token_hash_within(&mut conn, &scopes, common::t0())
            .await
            .unwrap();
        let got: Vec<&String> = got.iter().map(|(c, _)| &c.name).collect();
        assert_eq!(got, want, "case {case}: {scopes:?}");
        nonempty += usize::from(!want.is_empty() && want.len() < FLEET);
    }
    assert!(
        nonempty > 100,
        "the cases select some clusters and not all: {nonempty}"
    );
}

fn gate_scope(rng: &mut Rng) -> Option<GateScope> {
    if rng.chance(2) {
        return None;
    }
    Some(GateScope {
        names: if rng.chance(3) {
            vec![format!("g-{}", rng.below(6))]
        } else {
            Vec::new()
        },
        selector: (!rng.chance(3)).then(|| LabelSelector {
            match_labels: BTreeMap::from([("team".to_string(), rng.pick(&VALUES).to_string())]),
            ..LabelSelector::default()
        }),
    })
}

fn access_scope(rng: &mut Rng) -> AccessScope {
    AccessScope {
        clusters: (!rng.chance(6)).then(|| cluster_scope(rng)),
        gates: gate_scope(rng),
    }
}

/// An actor holding 1 to 3 viewer/operator grants of random scopes.
fn actor(rng: &mut Rng, case: usize) -> Actor {
    let grants = (0..1 + rng.below(3))
        .map(|_| Grant {
            role: if rng.chance(2) {
                Role::Viewer
            } else {
                Role::Operator
            },
            scope: access_scope(rng),
            source: GrantSource::Token {
                name: format!("case-{case}"),
            },
        })
        .collect();
    Actor::from_grants(
        Identity::System {
            name: format!("case-{case}"),
        },
        grants,
    )
    .unwrap()
}

fn sorted(
    m: &std::collections::HashMap<String, BTreeMap<String, String>>,
) -> BTreeMap<&String, &BTreeMap<String, String>> {
    m.iter().collect()
}

/// The change streams' view as text: every map in it ordered (its labels sorted here).
fn view_text(inputs: &FleetInputs) -> String {
    let mut v = view::view(inputs).unwrap();
    let labels = std::mem::take(&mut v.labels);
    format!(
        "{v:?} {:?} {:?}",
        sorted(&labels.clusters),
        sorted(&labels.gates)
    )
}

/// Every fleet projection of `inputs`, as JSON.
fn projections(inputs: &FleetInputs) -> Value {
    json!({
        "status": status::fleet_status(inputs, None).unwrap(),
        "grid": grid::grid(inputs).unwrap(),
        "view": view_text(inputs),
    })
}

#[tokio::test]
async fn a_scoped_read_shows_exactly_what_restricting_the_whole_fleet_showed() {
    let hub = Hub::new().await;
    let mut rng = Rng(0xfee1_600d);
    let all = fleet(&hub, &mut rng).await;
    // Gates of several scopes and teams, some closed; objects reported on some clusters
    // (held under the closed gates), an override on a few clusters.
    for g in 0..6 {
        let team = VALUES[g % VALUES.len()];
        let scope = match g {
            0 => json!({"selector": {}}),
            1 => json!({"selector": {"matchLabels": {"env": "a"}}}),
            2 => {
                json!({"selector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["b"]}]}})
            }
            3 => json!({"names": [name(1), name(2), name(3)]}),
            _ => json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}}),
        };
        let r = hub
            .post_json(
                "/api/v1/gates",
                &hub.admin,
                json!({"apiVersion": "fleetgate.io/v1", "kind": "Gate",
                       "metadata": {"name": format!("g-{g}"), "labels": {"team": team}},
                       "spec": {"clusters": scope, "targets": {"kinds": ["Kustomization"]},
                                "default": if g % 2 == 0 { "closed" } else { "open" },
                                "timeZone": "UTC", "windows": []}}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    let reported: Vec<&String> = all.keys().step_by(3).collect();
    sqlx::query(
        "insert into object_status (cluster, kind, namespace, name, gates, held, reported_at) \
         select c, 'Kustomization', 'apps', 'app-' || k, array['g-0', 'g-' || (k % 6)], k % 2 = 0, now() \
         from unnest($1::text[]) as c, generate_series(0, 3) as k",
    )
    .bind(&reported)
    .execute(&hub.pool)
    .await
    .unwrap();
    let r = hub
        .post_json(
            "/api/v1/gates/g-0/open",
            &hub.admin,
            json!({"for": "1h", "reason": "equivalence", "clusters": {"names": [name(4), name(5)]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text);

    let mut narrowed = 0;
    for case in 0..120 {
        let actor = actor(&mut rng, case);
        let new = hub
            .service
            .read_fleet_as(&actor, Scope::Fleet)
            .await
            .unwrap();
        let mut old = hub.service.read_fleet(Scope::Fleet).await.unwrap();
        if let Some(v) = actor.read_scope() {
            old.restrict(v);
        }
        assert_eq!(
            projections(&new),
            projections(&old),
            "case {case}: {actor:?}"
        );
        narrowed += usize::from(new.clusters.len() < FLEET);
    }
    assert!(
        narrowed > 60,
        "most cases read a part of the fleet: {narrowed}"
    );
}
