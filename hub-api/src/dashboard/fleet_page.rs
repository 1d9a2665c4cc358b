//! The fleet page's rows at fleet scale: `GET /api/v1/dashboard/fleet` filters, orders,
//! groups and pages the grid on the server, so a browser showing 10,000 clusters receives
//! and draws one page of rows (the dashboard asks for 100) and the counts, never the whole
//! fleet. The filters are the page's own (the same words as its filter box); without `limit`
//! the answer is every row, as before.

use std::collections::{BTreeMap, BTreeSet};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;

use crate::service::PageRequest;
use crate::service::fleet::{FleetGrid, FleetRow};
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

fn matches(words: &[Word], row: &FleetRow) -> bool {
    words.iter().all(|w| match w {
        Word::Is(k, v) => row.labels.get(k) == Some(v),
        Word::IsNot(k, v) => row.labels.get(k) != Some(v),
        Word::Name(part) => row.name.to_lowercase().contains(part.as_str()),
    })
}

/// Whether an enforcing gate among `cols` is closed on `row`.
fn closed(row: &FleetRow, cols: &[usize]) -> bool {
    cols.iter()
        .filter_map(|&i| row.cells.get(i).and_then(Option::as_ref))
        .any(|c| c.state == "closed" && !c.warn)
}

fn rank(row: &FleetRow, cols: &[usize]) -> u8 {
    (if row.connected { 0 } else { 4 })
        + (if row.held > 0 { 2 } else { 0 })
        + u8::from(closed(row, cols))
}

fn cursor(offset: usize) -> String {
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&offset).unwrap_or_default())
}

/// The page `q` asks for of `grid` (every cluster the caller sees); 422 naming the
/// parameter for a bad `limit`, `state`, `sort` or `gate`, 400 for a bad `cursor`.
pub fn page(grid: FleetGrid, q: &FleetPageQuery) -> Result<FleetGridPage> {
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
    let all: Vec<usize> = (0..grid.gates.len()).collect();
    let cols: Vec<usize> = match q.gate.as_deref().filter(|g| !g.is_empty()) {
        None => all.clone(),
        Some(g) => match grid.gates.iter().position(|n| n == g) {
            Some(i) => vec![i],
            None => return Err(Error::invalid("gate", format!("no gate named '{g}'"))),
        },
    };

    let mut counts = FleetCounts {
        clusters: grid.clusters.len(),
        ..FleetCounts::default()
    };
    let mut keys = BTreeSet::new();
    for c in &grid.clusters {
        if closed(c, &all) {
            counts.closed += 1;
        } else {
            counts.open += 1;
        }
        counts.held += usize::from(c.held > 0);
        counts.offline += usize::from(!c.connected);
        keys.extend(c.labels.keys().cloned());
    }

    let words = words(q.filter.as_deref().unwrap_or(""));
    let FleetGrid {
        at,
        gates,
        clusters,
        overrides,
    } = grid;
    let mut rows: Vec<FleetRow> = clusters
        .into_iter()
        .filter(|c| matches(&words, c))
        .filter(|c| match state {
            "closed" => closed(c, &cols),
            "open" => !closed(c, &cols),
            "held" => c.held > 0,
            "offline" => !c.connected,
            _ => true,
        })
        .collect();
    if attention {
        rows.sort_by(|a, b| {
            rank(b, &cols)
                .cmp(&rank(a, &cols))
                .then_with(|| a.name.cmp(&b.name))
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
        let mut by_key: BTreeMap<String, Vec<FleetRow>> = BTreeMap::new();
        for r in rows {
            let key = r
                .labels
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
                closed: members.iter().filter(|c| closed(c, &cols)).count(),
                held: members.iter().filter(|c| c.held > 0).count(),
                offline: members.iter().filter(|c| !c.connected).count(),
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
    let clusters: Vec<FleetRow> = rows.drain(start..end).collect();
    Ok(FleetGridPage {
        grid: FleetGrid {
            at,
            gates,
            clusters,
            overrides,
        },
        total,
        offset: start,
        next_cursor,
        counts,
        label_keys: keys.into_iter().collect(),
        groups,
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
