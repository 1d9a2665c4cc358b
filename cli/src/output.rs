//! Printing results: aligned tables for people, JSON/YAML for scripts.
//! JSON and YAML always carry the full data; tables pick columns.

use std::collections::BTreeMap;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use crate::args::Format;
use crate::error::{Error, Result};

/// A plain text table: a header row and aligned columns, like kubectl.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new<S: AsRef<str>>(header: &[S]) -> Self {
        Table {
            header: header.iter().map(|h| h.as_ref().to_string()).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(cols) {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(self.rows.iter()) {
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(cols) {
                if i + 1 == cols {
                    line.push_str(cell);
                } else {
                    let pad = widths[i] - cell.chars().count();
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad + 3));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

/// Prints `value` as JSON or YAML; for `Format::Table` calls `table`.
pub fn print<T: Serialize>(
    format: Format,
    value: &T,
    table: impl FnOnce(&T) -> String,
) -> Result<()> {
    let text = match format {
        Format::Json => to_json(value)?,
        Format::Yaml => {
            fleetgate_policy::yaml::to_string(value).map_err(|e| Error::Other(e.to_string()))?
        }
        Format::Table => table(value),
    };
    print!("{text}");
    if !text.ends_with('\n') {
        println!();
    }
    Ok(())
}

pub fn to_json<T: Serialize>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| Error::Other(e.to_string()))
}

/// Prints an answer of the hub like [`print`], its JSON/YAML keys sorted as
/// they always printed (scripts compare them), not in struct field order.
pub fn print_answer<T: Serialize>(
    format: Format,
    value: &T,
    table: impl FnOnce(&T) -> String,
) -> Result<()> {
    match format {
        Format::Table => print(format, value, table),
        Format::Json | Format::Yaml => {
            let sorted = serde_json::to_value(value).map_err(|e| Error::Other(e.to_string()))?;
            print(format, &sorted, |_| String::new())
        }
    }
}

/// A string field of a JSON object, or "" (tables show what there is).
pub fn s(v: &serde_json::Value, key: &str) -> String {
    match v.get(key) {
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// An instant as the hub writes it (RFC 3339, UTC, only the fractional digits it needs).
pub fn time(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// [`time`], or "" for none.
pub fn time_or_empty(t: Option<&DateTime<Utc>>) -> String {
    t.map(time).unwrap_or_default()
}

/// `k=v,k=v` for a label map.
pub fn labels(map: &BTreeMap<String, String>) -> String {
    if map.is_empty() {
        return "<none>".to_string();
    }
    map.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns_and_trims() {
        let mut t = Table::new(&["NAME", "STATE"]);
        t.row(vec!["a-long-name".into(), "open".into()]);
        t.row(vec!["b".into(), "".into()]);
        assert_eq!(t.render(), "NAME          STATE\na-long-name   open\nb\n");
    }
}
