//! The fleet page's rows at fleet scale: `GET /api/v1/dashboard/fleet` filters, orders,
//! groups and pages the grid on the server, so a browser showing 10,000 clusters receives
//! and draws one page of rows (the dashboard asks for 100) and the counts, never the whole
//! fleet. The filters are the page's own (the same words as its filter box); without `limit`
//! the answer is every row, as before.
//!
//! [`grid_page`] builds only the page's rows: the counts, filters, order and groups need of
//! every cluster only its name, labels, connection, held changes and which gates are closed
//! on it ([`Brief`]), so the cells (reasons, counts per gate, rollout failures) are made for
//! the rows shown. [`page`] pages a whole [`FleetGrid`] the same way; both run
//! [`page_rows`], and `hub/tests/scoped_reads.rs` holds them equal.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

use super::evaluate::evaluate;
use super::grid::{closed_columns, columns, held_changes, row};
use super::inputs::FleetInputs;
use super::{FleetGrid, FleetRow};
use crate::service::PageRequest;
use crate::{Error, Result};

pub use fleetgate_api_types::dashboard::{FleetCounts, FleetGridPage, FleetGroup};

/// `GET /api/v1/dashboard/fleet` query: every parameter optional.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FleetPageQuery {
    /// Rows per page, 1..=1000; absent: every row.
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
    /// Words, all of which a row must match: `key=value`, `key!=value` (also true without
    /// the label), or a part of the cluster's name (any case). Separated by spaces or commas.
    pub filter: Option<String>,
    /// Only this gate's column decides `state` and the groups' counts.
    pub gate: Option<String>,
    /// `closed` (a shown enforcing gate closed), `open`, `held` (changes held) or
    /// `offline` (spoke offline).
    pub state: Option<String>,
    /// `name` (default) or `attention` (offline spokes, then held changes, then closed
    /// gates; names break ties).
    pub sort: Option<String>,
    /// Group the rows by this label's value (groups in order of value).
    pub group: Option<String>,
    /// Groups (values of `group`, comma-separated) whose rows are left out.
    pub collapsed: Option<String>,
}

/// One filter word.
enum Word {
    Is(String, String),
    IsNot(String, String),
    Name(String),
}

fn words(text: &str) -> Vec<Word> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| {
            if let Some((k, v)) = w.split_once("!=")
                && !k.is_empty()
                && !k.contains(['=', '!'])
            {
                return Word::IsNot(k.to_string(), v.to_string());
            }
            if let Some((k, v)) = w.split_once('=')
                && !k.is_empty()
                && !k.contains('!')
            {
                let v = v.strip_prefix('=').unwrap_or(v);
                return Word::Is(k.to_string(), v.to_string());
            }
            Word::Name(w.to_lowercase())
        })
        .collect()
}

/// What the page decides a row by: a whole [`FleetRow`], or a [`Brief`] of one.
pub trait PageRow {
    fn name(&self) -> &str;
    fn labels(&self) -> &BTreeMap<String, String>;
    fn connected(&self) -> bool;
    /// Held changes (`FleetRow::held`).
    fn held(&self) -> u32;
    /// Whether an enforcing gate among the columns `cols` is closed on the row.
    fn closed(&self, cols: &[usize]) -> bool;
}

impl PageRow for FleetRow {
    fn name(&self) -> &str {
        &self.name
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
    fn connected(&self) -> bool {
        self.connected
    }
    fn held(&self) -> u32 {
        self.held
    }
    fn closed(&self, cols: &[usize]) -> bool {
        cols.iter()
            .filter_map(|&i| self.cells.get(i).and_then(Option::as_ref))
            .any(|c| c.state == "closed" && !c.warn)
    }
}

/// A cluster as the page decides by it, without its cells: which of the grid's columns
/// are an enforcing gate closed, and where its evaluation is (to build its row if shown).
pub struct Brief<'a> {
    /// Its index among the evaluated clusters.
    pub at: usize,
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub connected: bool,
    pub held: u32,
    /// Per column: an enforcing gate closed.
    pub closed: Vec<bool>,
}

impl PageRow for Brief<'_> {
    fn name(&self) -> &str {
        self.name
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        self.labels
    }
    fn connected(&self) -> bool {
        self.connected
    }
    fn held(&self) -> u32 {
        self.held
    }
    fn closed(&self, cols: &[usize]) -> bool {
        cols.iter()
            .any(|&i| self.closed.get(i).copied().unwrap_or(false))
    }
}

fn matches<R: PageRow>(words: &[Word], row: &R) -> bool {
    words.iter().all(|w| match w {
        Word::Is(k, v) => row.labels().get(k) == Some(v),
        Word::IsNot(k, v) => row.labels().get(k) != Some(v),
        Word::Name(part) => row.name().to_lowercase().contains(part.as_str()),
    })
}

fn rank<R: PageRow>(row: &R, cols: &[usize]) -> u8 {
    (if row.connected() { 0 } else { 4 })
        + (if row.held() > 0 { 2 } else { 0 })
        + u8::from(row.closed(cols))
}

fn cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&offset).unwrap_or_default())
}

/// A page of rows `R` and what the page says of all of them.
pub struct Paged<R> {
    pub rows: Vec<R>,
    pub total: usize,
    pub offset: usize,
    pub next_cursor: Option<String>,
    pub counts: FleetCounts,
    pub label_keys: Vec<String>,
    pub groups: Vec<FleetGroup>,
}

/// The page `q` asks for of `rows` (every cluster the caller sees, by name) in a grid of
/// `gates` columns; 422 naming the parameter for a bad `limit`, `state`, `sort` or `gate`,
/// 400 for a bad `cursor`.
pub fn page_rows<R: PageRow>(
    rows: Vec<R>,
    gates: &[String],
    q: &FleetPageQuery,
) -> Result<Paged<R>> {
    let req = PageRequest {
        limit: q.limit,
        cursor: q.cursor.clone(),
    };
    let limit = match q.limit {
        Some(_) => Some(req.limit()? as usize),
        None => None,
    };
    let offset = req.key::<usize>()?.unwrap_or(0);
    let state = q.state.as_deref().unwrap_or("");
    if !["", "closed", "open", "held", "offline"].contains(&state) {
        return Err(Error::invalid(
            "state",
            format!("must be closed, open, held or offline, got '{state}'"),
        ));
    }
    let attention = match q.sort.as_deref().unwrap_or("") {
        "" | "name" => false,
        "attention" => true,
        other => {
            return Err(Error::invalid(
                "sort",
                format!("must be name or attention, got '{other}'"),
            ));
        }
    };
    let all: Vec<usize> = (0..gates.len()).collect();
    let cols: Vec<usize> = match q.gate.as_deref().filter(|g| !g.is_empty()) {
        None => all.clone(),
        Some(g) => match gates.iter().position(|n| n == g) {
            Some(i) => vec![i],
            None => return Err(Error::invalid("gate", format!("no gate named '{g}'"))),
        },
    };

    let mut counts = FleetCounts {
        clusters: rows.len(),
        ..FleetCounts::default()
    };
    let mut keys: BTreeSet<&str> = BTreeSet::new();
    for c in &rows {
        if c.closed(&all) {
            counts.closed += 1;
        } else {
            counts.open += 1;
        }
        counts.held += usize::from(c.held() > 0);
        counts.offline += usize::from(!c.connected());
        keys.extend(c.labels().keys().map(String::as_str));
    }
    let label_keys: Vec<String> = keys.into_iter().map(str::to_string).collect();

    let words = words(q.filter.as_deref().unwrap_or(""));
    let mut rows: Vec<R> = rows
        .into_iter()
        .filter(|c| matches(&words, c))
        .filter(|c| match state {
            "closed" => c.closed(&cols),
            "open" => !c.closed(&cols),
            "held" => c.held() > 0,
            "offline" => !c.connected(),
            _ => true,
        })
        .collect();
    if attention {
        rows.sort_by(|a, b| {
            rank(b, &cols)
                .cmp(&rank(a, &cols))
                .then_with(|| a.name().cmp(b.name()))
        });
    }

    let mut groups = Vec::new();
    if let Some(label) = q.group.as_deref().filter(|g| !g.is_empty()) {
        let collapsed: BTreeSet<&str> = q
            .collapsed
            .as_deref()
            .unwrap_or("")
            .split(',')
            .filter(|k| !k.is_empty())
            .collect();
        let mut by_key: BTreeMap<String, Vec<R>> = BTreeMap::new();
        for r in rows {
            let key = r
                .labels()
                .get(label)
                .cloned()
                .unwrap_or_else(|| "(none)".into());
            by_key.entry(key).or_default().push(r);
        }
        rows = Vec::new();
        for (key, members) in by_key {
            let is_collapsed = collapsed.contains(key.as_str());
            groups.push(FleetGroup {
                clusters: members.len(),
                closed: members.iter().filter(|c| c.closed(&cols)).count(),
                held: members.iter().filter(|c| c.held() > 0).count(),
                offline: members.iter().filter(|c| !c.connected()).count(),
                collapsed: is_collapsed,
                at: rows.len(),
                key,
            });
            if !is_collapsed {
                rows.extend(members);
            }
        }
    }

    let total = rows.len();
    let start = offset.min(total);
    let end = limit.map_or(total, |n| start.saturating_add(n).min(total));
    let next_cursor = (end < total).then(|| cursor(end));
    let rows: Vec<R> = rows.drain(start..end).collect();
    Ok(Paged {
        rows,
        total,
        offset: start,
        next_cursor,
        counts,
        label_keys,
        groups,
    })
}

/// The page `q` asks for of a whole `grid` (every cluster the caller sees), as
/// [`page_rows`] decides it.
pub fn page(grid: FleetGrid, q: &FleetPageQuery) -> Result<FleetGridPage> {
    let FleetGrid {
        at,
        gates,
        clusters,
        overrides,
    } = grid;
    let p = page_rows(clusters, &gates, q)?;
    Ok(FleetGridPage {
        grid: FleetGrid {
            at,
            gates,
            clusters: p.rows,
            overrides,
        },
        total: p.total,
        offset: p.offset,
        next_cursor: p.next_cursor,
        counts: p.counts,
        label_keys: p.label_keys,
        groups: p.groups,
    })
}

/// The page `q` asks for of the fleet read `inputs`: what [`page`] makes of
/// `grid(inputs)`, with only the page's rows built.
pub fn grid_page(inputs: &FleetInputs, q: &FleetPageQuery) -> Result<FleetGridPage> {
    let gates = columns(inputs);
    let evals = evaluate(inputs)?;
    let briefs: Vec<Brief<'_>> = evals
        .clusters
        .iter()
        .enumerate()
        .map(|(at, c)| {
            let cluster = &c.cluster.row;
            Brief {
                at,
                name: &cluster.name,
                labels: &cluster.labels,
                connected: cluster.connected,
                held: held_changes(inputs, &cluster.name),
                closed: closed_columns(&gates, c),
            }
        })
        .collect();
    let p = page_rows(briefs, &gates, q)?;
    let clusters = p
        .rows
        .iter()
        .map(|b| row(inputs, &gates, &evals.clusters[b.at]))
        .collect();
    Ok(FleetGridPage {
        grid: FleetGrid {
            at: inputs.at,
            gates,
            clusters,
            overrides: inputs.live_overrides().count(),
        },
        total: p.total,
        offset: p.offset,
        next_cursor: p.next_cursor,
        counts: p.counts,
        label_keys: p.label_keys,
        groups: p.groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::fleet::Cell;

    fn row(name: &str, env: &str, closed: bool, held: u32, connected: bool) -> FleetRow {
        FleetRow {
            name: name.into(),
            labels: BTreeMap::from([("env".to_string(), env.to_string())]),
            connected,
            last_seen_at: None,
            spoke_version: None,
            spoke_skew: fleetgate_api_types::version::spoke_skew_here(None),
            held,
            held_objects: 0,
            held_objects_waiting: 0,
            held_objects_by_person: 0,
            held_objects_not_permitted: 0,
            would_hold_objects: 0,
            report_problems: 0,
            report_refused: false,
            cells: vec![Some(Cell {
                state: if closed { "closed" } else { "open" }.into(),
                reason: String::new(),
                next_transition: None,
                held,
                rollout_wave: None,
                warn: false,
                would_suspend: 0,
                rollout_failure: None,
                would_hold_objects: 0,
            })],
        }
    }

    fn grid(n: usize) -> FleetGrid {
        FleetGrid {
            at: chrono::Utc::now(),
            gates: vec!["g".into()],
            clusters: (0..n)
                .map(|i| {
                    let env = if i % 2 == 0 { "prod" } else { "dev" };
                    row(
                        &format!("c-{i:03}"),
                        env,
                        i % 3 == 0,
                        u32::from(i % 5 == 0),
                        i % 7 != 0,
                    )
                })
                .collect(),
            overrides: 0,
        }
    }

    fn q(limit: Option<u32>) -> FleetPageQuery {
        FleetPageQuery {
            limit,
            ..FleetPageQuery::default()
        }
    }

    #[test]
    fn pages_add_up_to_the_filtered_rows_in_order() {
        let mut query = FleetPageQuery {
            filter: Some("env=prod".into()),
            state: Some("closed".into()),
            ..q(Some(4))
        };
        let mut seen = Vec::new();
        loop {
            let p = page(grid(50), &query).unwrap();
            assert!(p.grid.clusters.len() <= 4);
            assert_eq!(p.counts.clusters, 50);
            seen.extend(p.grid.clusters.iter().map(|c| c.name.clone()));
            match p.next_cursor {
                Some(c) => query.cursor = Some(c),
                None => break,
            }
        }
        let want: Vec<String> = (0..50)
            .filter(|i| i % 2 == 0 && i % 3 == 0)
            .map(|i| format!("c-{i:03}"))
            .collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn groups_count_and_collapse() {
        let query = FleetPageQuery {
            group: Some("env".into()),
            collapsed: Some("dev".into()),
            ..q(Some(100))
        };
        let p = page(grid(10), &query).unwrap();
        assert_eq!(p.groups.len(), 2);
        assert_eq!(
            (p.groups[0].key.as_str(), p.groups[0].collapsed),
            ("dev", true)
        );
        assert_eq!((p.groups[1].at, p.groups[1].clusters), (0, 5));
        assert_eq!(p.total, 5);
        assert!(p.grid.clusters.iter().all(|c| c.labels["env"] == "prod"));
    }

    #[test]
    fn attention_first_and_name_words() {
        let query = FleetPageQuery {
            sort: Some("attention".into()),
            filter: Some("C-00".into()),
            ..q(None)
        };
        let p = page(grid(20), &query).unwrap();
        assert_eq!(p.total, 10);
        // c-000: offline, held and closed comes first.
        assert_eq!(p.grid.clusters[0].name, "c-000");
        assert!(p.next_cursor.is_none());
    }

    #[test]
    fn bad_parameters_name_their_field() {
        let field = |query: FleetPageQuery| {
            page(grid(3), &query)
                .unwrap_err()
                .field()
                .map(str::to_string)
        };
        let bad_state = FleetPageQuery {
            state: Some("shut".into()),
            ..q(None)
        };
        assert_eq!(field(bad_state).as_deref(), Some("state"));
        let bad_sort = FleetPageQuery {
            sort: Some("size".into()),
            ..q(None)
        };
        assert_eq!(field(bad_sort).as_deref(), Some("sort"));
        let bad_gate = FleetPageQuery {
            gate: Some("nope".into()),
            ..q(None)
        };
        assert_eq!(field(bad_gate).as_deref(), Some("gate"));
        assert_eq!(field(q(Some(0))).as_deref(), Some("limit"));
        let bad_cursor = FleetPageQuery {
            cursor: Some("!!".into()),
            ..q(Some(1))
        };
        assert_eq!(field(bad_cursor).as_deref(), Some("cursor"));
    }
}
