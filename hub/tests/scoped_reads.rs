//! A scoped reader's fleet read asks PostgreSQL for its share of the clusters (the scope
//! as a `where` clause, `db::scope_sql`) instead of reading the fleet and dropping the
//! rest; what it reads must be exactly what it saw before. Over random fleets and random
//! scopes (names, `matchLabels`, every selector operator, unions of grants):
//! - the store's clusters for a union of cluster scopes are exactly those
//!   `ClusterScope::matches` keeps;
//! - every fleet view of a scoped actor (fleet status, summary, dashboard grid, the change
//!   streams' view, a gate's clusters) is the same as reading the whole fleet and
//!   restricting it (`FleetInputs::restrict`), as every read did before;
//! - the dashboard's fleet page, built from briefs of every cluster and the page's rows
//!   only (`grid_page`), is exactly the page of the whole grid (`page`) for random
//!   filters, states, gates, orders, groups and pages, for every kind of reader.

mod common;

use std::collections::BTreeMap;

use common::Hub;
use fleetgate_api_types::{AccessScope, GateScope};
use fleetgate_hub::db::clusters;
use fleetgate_hub::service::fleet::grid_page::{FleetPageQuery, grid_page, page};
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

/// The random fleet with gates of several scopes and teams, some closed, one in warn mode;
/// objects reported on some clusters (held under the closed gates), an override on a few
/// clusters, every fourth spoke connected.
async fn gated_fleet(hub: &Hub, rng: &mut Rng) -> BTreeMap<String, BTreeMap<String, String>> {
    let all = fleet(hub, rng).await;
    for g in 0..7 {
        let team = VALUES[g % VALUES.len()];
        let scope = match g {
            0 => json!({"selector": {}}),
            1 => json!({"selector": {"matchLabels": {"env": "a"}}}),
            2 => {
                json!({"selector": {"matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["b"]}]}})
            }
            3 => json!({"names": [name(1), name(2), name(3)]}),
            4 | 5 => {
                json!({"selector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}})
            }
            _ => json!({"selector": {"matchLabels": {"region": "a"}}}),
        };
        let r = hub
            .post_json(
                "/api/v1/gates",
                &hub.admin,
                json!({"apiVersion": "fleetgate.io/v1", "kind": "Gate",
                       "metadata": {"name": format!("g-{g}"), "labels": {"team": team}},
                       "spec": {"clusters": scope, "targets": {"kinds": ["Kustomization"]},
                                "enforcement": if g == 6 { "warn" } else { "enforce" },
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

    let connected: Vec<&String> = all.keys().step_by(4).collect();
    sqlx::query("update cluster_connections set connected = true, last_seen_at = now() where cluster = any($1)")
        .bind(&connected)
        .execute(&hub.pool)
        .await
        .unwrap();
    all
}

#[tokio::test]
async fn a_scoped_read_shows_exactly_what_restricting_the_whole_fleet_showed() {
    let hub = Hub::new().await;
    let mut rng = Rng(0xfee1_600d);
    gated_fleet(&hub, &mut rng).await;
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

fn page_query(rng: &mut Rng, gates: usize) -> FleetPageQuery {
    let word = |rng: &mut Rng| -> String {
        match rng.below(4) {
            0 => format!("{}={}", rng.pick(&KEYS), rng.pick(&VALUES)),
            1 => format!("{}!={}", rng.pick(&KEYS), rng.pick(&VALUES)),
            2 => format!("C-{}", rng.below(16)),
            _ => format!("0{}", rng.below(10)),
        }
    };
    FleetPageQuery {
        limit: (!rng.chance(5)).then(|| 1 + rng.below(40) as u32),
        cursor: None,
        filter: (!rng.chance(2)).then(|| {
            (0..1 + rng.below(2))
                .map(|_| word(rng))
                .collect::<Vec<_>>()
                .join(if rng.chance(2) { " " } else { "," })
        }),
        gate: rng.chance(3).then(|| format!("g-{}", rng.below(gates))),
        state: rng
            .chance(2)
            .then(|| rng.pick(&["closed", "open", "held", "offline"]).to_string()),
        sort: rng
            .chance(2)
            .then(|| rng.pick(&["name", "attention"]).to_string()),
        group: rng.chance(2).then(|| rng.pick(&KEYS).to_string()),
        collapsed: rng
            .chance(3)
            .then(|| format!("{},{}", rng.pick(&VALUES), rng.pick(&["(none)", "a", "zz"]))),
    }
}

#[tokio::test]
async fn the_fleet_page_built_from_briefs_is_the_page_of_the_whole_grid() {
    let hub = Hub::new().await;
    let mut rng = Rng(0x0bad_cafe);
    gated_fleet(&hub, &mut rng).await;
    let mut pages = 0;
    let mut shown = 0;
    for case in 0..60 {
        // Every fourth reader sees the whole fleet (no cluster or gate scope).
        let actor = if case % 4 == 0 {
            Actor::from_grants(
                Identity::System {
                    name: format!("case-{case}"),
                },
                vec![Grant {
                    role: Role::Viewer,
                    scope: AccessScope::default(),
                    source: GrantSource::Token {
                        name: format!("case-{case}"),
                    },
                }],
            )
            .unwrap()
        } else {
            actor(&mut rng, case)
        };
        let inputs = hub
            .service
            .read_fleet_as(&actor, Scope::Fleet)
            .await
            .unwrap();
        let whole = grid::grid(&inputs).unwrap();
        for _ in 0..4 {
            let mut q = page_query(&mut rng, 7);
            // Every page of the query, following the cursors.
            for _ in 0..200 {
                let fast = grid_page(&inputs, &q);
                let slow = page(whole.clone(), &q);
                let (fast, slow) = match (fast, slow) {
                    (Ok(f), Ok(s)) => (f, s),
                    (Err(f), Err(s)) => {
                        assert_eq!(f.to_string(), s.to_string(), "case {case}: {q:?}");
                        break;
                    }
                    (f, s) => panic!("case {case}: {q:?}: {:?} / {:?}", f.err(), s.err()),
                };
                assert_eq!(
                    serde_json::to_value(&fast).unwrap(),
                    serde_json::to_value(&slow).unwrap(),
                    "case {case}: {q:?}"
                );
                pages += 1;
                shown += fast.grid.clusters.len();
                match fast.next_cursor {
                    Some(c) => q.cursor = Some(c),
                    None => break,
                }
            }
        }
    }
    assert!(pages > 300, "many pages compared: {pages}");
    assert!(shown > 2_000, "the pages showed rows: {shown}");
}

#[tokio::test]
async fn the_fleet_status_pages_add_up_to_the_whole_status() {
    let hub = Hub::new().await;
    let mut rng = Rng(0x5747_0505);
    gated_fleet(&hub, &mut rng).await;
    for case in 0..24 {
        let actor = actor(&mut rng, case);
        let selector = ["", "env=a", "tier", "region notin (b)"][case % 4];
        let selector = (!selector.is_empty()).then_some(selector);
        let whole = hub.service.fleet_status(&actor, selector).await.unwrap();
        let mut want: Vec<Value> = whole
            .clusters
            .iter()
            .map(|c| serde_json::to_value(c).unwrap())
            .collect();
        want.sort_by(|a, b| {
            a["cluster"]["name"]
                .as_str()
                .cmp(&b["cluster"]["name"].as_str())
        });
        let limit = 1 + rng.below(30) as u32;
        let mut page = fleetgate_hub::service::PageRequest {
            limit: Some(limit),
            cursor: None,
        };
        let mut got = Vec::new();
        loop {
            let p = hub
                .service
                .fleet_status_page(&actor, selector, &page)
                .await
                .unwrap();
            assert!(p.clusters.len() <= limit as usize);
            assert_eq!(
                serde_json::to_value(&p.summary).unwrap(),
                serde_json::to_value(&whole.summary).unwrap(),
                "case {case}: every page counts the whole fleet"
            );
            got.extend(p.clusters.iter().map(|c| serde_json::to_value(c).unwrap()));
            match p.next_cursor {
                Some(c) => page.cursor = Some(c),
                None => break,
            }
        }
        assert_eq!(
            got, want,
            "case {case}: {actor:?} {selector:?} limit {limit}"
        );
    }
    // Bad paging names its parameter.
    let r = hub.get("/api/v1/status/clusters?limit=0").await;
    assert_eq!(r.status, 422, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "limit", "{}", r.text);
    let r = hub.get("/api/v1/status/clusters?limit=5&cursor=!!").await;
    assert_eq!(r.status, 400, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "cursor", "{}", r.text);
}
