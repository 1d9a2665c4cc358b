//! A light pass over iCalendar text that keeps what calcard's parser drops: where each component
//! and property stands in the feed (1-based line numbers, folded lines unfolded), so errors can
//! name "line 42, DTSTART". Components are numbered in BEGIN order, as calcard numbers them.

/// One property of a component, unfolded.
#[derive(Debug, Clone)]
pub(crate) struct PropertyLine {
    /// Upper-cased property name (`DTSTART`).
    pub(crate) name: String,
    /// The line the property starts on, 1-based.
    pub(crate) line: usize,
    /// The `TZID` parameter, if any.
    pub(crate) tzid: Option<String>,
    /// The value as written (after unfolding).
    pub(crate) value: String,
}

/// One component (`VCALENDAR`, `VEVENT`, `VTIMEZONE`, …) and its own properties.
#[derive(Debug, Clone)]
pub(crate) struct ComponentLines {
    /// Upper-cased component name.
    pub(crate) kind: String,
    /// The line of its `BEGIN:`.
    pub(crate) begin: usize,
    pub(crate) properties: Vec<PropertyLine>,
}

impl ComponentLines {
    /// The first property called `name`.
    pub(crate) fn property(&self, name: &str) -> Option<&PropertyLine> {
        self.properties.iter().find(|p| p.name == name)
    }
}

/// Every component in BEGIN order (index = calcard's component id).
pub(crate) fn scan(text: &str) -> Vec<ComponentLines> {
    let mut components: Vec<ComponentLines> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    for (line, logical) in unfold(text) {
        let Some((name, params, value)) = split_property(&logical) else {
            continue;
        };
        match name.as_str() {
            "BEGIN" => {
                stack.push(components.len());
                components.push(ComponentLines {
                    kind: value.trim().to_ascii_uppercase(),
                    begin: line,
                    properties: Vec::new(),
                });
            }
            "END" => {
                stack.pop();
            }
            _ => {
                if let Some(&i) = stack.last() {
                    components[i].properties.push(PropertyLine {
                        name,
                        line,
                        tzid: param(&params, "TZID"),
                        value,
                    });
                }
            }
        }
    }
    components
}

/// Logical lines with the number of the physical line each starts on. A line beginning with a
/// space or tab continues the previous one (RFC 5545 §3.1); CRLF and bare LF both end lines.
pub(crate) fn unfold(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        match (raw.strip_prefix([' ', '\t']), out.last_mut()) {
            (Some(rest), Some((_, last))) => last.push_str(rest),
            _ => out.push((i + 1, raw.to_string())),
        }
    }
    out
}

/// `NAME;P1=V1;P2="V;2":VALUE` → (`NAME`, `P1=V1;P2="V;2"`, `VALUE`); `None` for lines that are
/// not properties.
pub(crate) fn split_property(line: &str) -> Option<(String, String, String)> {
    let line = line.trim_start_matches('\u{feff}');
    let mut in_quotes = false;
    let mut name_end = None;
    for (i, c) in line.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ';' if name_end.is_none() && !in_quotes => name_end = Some(i),
            ':' if !in_quotes => {
                let name_end = name_end.unwrap_or(i);
                let name = line[..name_end].trim().to_ascii_uppercase();
                if name.is_empty() {
                    return None;
                }
                let params = line.get(name_end + 1..i).unwrap_or_default().to_string();
                return Some((name, params, line[i + 1..].to_string()));
            }
            _ => {}
        }
    }
    None
}

/// A parameter's value (unquoted) from `P1=V1;P2="V2"`.
pub(crate) fn param(params: &str, wanted: &str) -> Option<String> {
    let mut in_quotes = false;
    let mut start = 0;
    let mut parts = Vec::new();
    for (i, c) in params.char_indices() {
        match c {
            '"' => in_quotes = !in_quotes,
            ';' if !in_quotes => {
                parts.push(&params[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&params[start..]);
    parts.into_iter().find_map(|p| {
        let (k, v) = p.split_once('=')?;
        k.trim()
            .eq_ignore_ascii_case(wanted)
            .then(|| v.trim().trim_matches('"').to_string())
    })
}

/// The feed's own refresh hint: REFRESH-INTERVAL (RFC 7986) or X-PUBLISHED-TTL, an RFC 5545
/// duration such as `PT1H` or `P1D`, from the VCALENDAR component.
pub(crate) fn refresh_hint(components: &[ComponentLines]) -> Option<chrono::Duration> {
    let calendar = components.first().filter(|c| c.kind == "VCALENDAR")?;
    ["REFRESH-INTERVAL", "X-PUBLISHED-TTL"]
        .iter()
        .filter_map(|n| calendar.property(n))
        .find_map(|p| parse_ical_duration(&p.value))
}

/// An RFC 5545 DURATION value (`P1D`, `PT1H30M`, `P2W`, `-PT5M`).
pub(crate) fn parse_ical_duration(value: &str) -> Option<chrono::Duration> {
    let v = value.trim().to_ascii_uppercase();
    let (negative, v) = match v.strip_prefix('-') {
        Some(rest) => (true, rest.to_string()),
        None => (false, v.strip_prefix('+').unwrap_or(&v).to_string()),
    };
    let body = v.strip_prefix('P')?;
    let mut total = chrono::Duration::zero();
    let mut number = String::new();
    let mut in_time = false;
    let mut any = false;
    for c in body.chars() {
        match c {
            'T' => in_time = true,
            '0'..='9' => number.push(c),
            _ => {
                let n: i64 = number.parse().ok()?;
                number.clear();
                any = true;
                total += match (c, in_time) {
                    ('W', false) => chrono::Duration::weeks(n),
                    ('D', false) => chrono::Duration::days(n),
                    ('H', true) => chrono::Duration::hours(n),
                    ('M', true) => chrono::Duration::minutes(n),
                    ('S', true) => chrono::Duration::seconds(n),
                    _ => return None,
                };
            }
        }
    }
    (any && number.is_empty()).then_some(if negative { -total } else { total })
}
