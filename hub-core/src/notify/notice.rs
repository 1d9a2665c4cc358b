//! What a person reads about an event in a chat message (Slack, Teams): a
//! one-line headline and labelled facts — the gate, the clusters, the reason,
//! the next change. Plain text: each chat format adds its own markup and
//! escaping ([`super::format`]). Pure; the event's `data` as delivered.

use serde_json::Value;

/// At most this many cluster (or object) names are listed; the rest are counted.
const MAX_LISTED: usize = 10;

/// A readable account of one event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// One line: "Gate xmas closed on 2 clusters".
    pub headline: String,
    /// `(label, value)` pairs, in reading order; empty values are left out.
    pub facts: Vec<(&'static str, String)>,
}

impl Notice {
    fn new(headline: String) -> Self {
        Self {
            headline,
            facts: Vec::new(),
        }
    }

    fn fact(mut self, label: &'static str, value: impl Into<String>) -> Self {
        let value = value.into();
        if !value.trim().is_empty() {
            self.facts.push((label, value));
        }
        self
    }

    /// The headline and every fact, one per line (a chat's plain fallback).
    pub fn plain(&self) -> String {
        let mut out = self.headline.clone();
        for (label, value) in &self.facts {
            out.push_str(&format!("\n{label}: {value}"));
        }
        out
    }
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or("")
}

/// "cluster a" or "3 clusters".
fn on(v: &Value) -> String {
    match v.as_array().map(Vec::as_slice) {
        Some([one]) => format!("cluster {}", one.as_str().unwrap_or("?")),
        Some(all) => format!("{} clusters", all.len()),
        None => "every cluster".into(),
    }
}

/// "a, b, c", or the first [`MAX_LISTED`] and "and 490 more".
fn list(v: &Value) -> String {
    let names: Vec<&str> = v
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = names
        .iter()
        .take(MAX_LISTED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_LISTED {
        out.push_str(&format!(" and {} more", names.len() - MAX_LISTED));
    }
    out
}

/// An RFC 3339 instant as "2026-12-20 00:00 UTC" (seconds kept when not zero).
fn time(v: &Value) -> String {
    let Some(t) = v
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    else {
        return String::new();
    };
    let t = t.with_timezone(&chrono::Utc);
    let f = if chrono::Timelike::second(&t) == 0 {
        "%Y-%m-%d %H:%M UTC"
    } else {
        "%Y-%m-%d %H:%M:%S UTC"
    };
    t.format(f).to_string()
}

fn cause(data: &Value) -> String {
    let c = match s(data, "cause") {
        "window" => "window edge",
        "override" => "override",
        "manifest" => "gate manifest change",
        "inClusterRequest" => "request made in the cluster",
        "calendar" => "calendar",
        "rollout" => "rollout",
        other => other,
    };
    match data["actor"].as_str() {
        Some(a) => format!("{c} by {a}"),
        None => c.to_string(),
    }
}

fn opens(state: &str) -> (&'static str, &'static str) {
    if state == "open" {
        ("opens", "opened")
    } else {
        ("closes", "closed")
    }
}

/// The notice for an event of `event_type` with `data`.
pub fn notice(event_type: &str, data: &Value) -> Notice {
    let (family, what) = event_type.split_once('.').unwrap_or((event_type, ""));
    match (family, what) {
        ("gate", "opened" | "closed") => Notice::new(format!(
            "Gate {} {what} on {}",
            s(data, "gate"),
            on(&data["clusters"])
        ))
        .fact("Gate", s(data, "gate"))
        .fact("Clusters", list(&data["clusters"]))
        .fact("Reason", s(data, "reason"))
        .fact("Cause", cause(data))
        .fact("At", time(&data["at"]))
        .fact(
            "Next change",
            match time(&data["nextTransition"]) {
                t if t.is_empty() => "none scheduled".to_string(),
                t => t,
            },
        ),
        ("gate", "upcoming") => Notice::new(format!(
            "Gate {} {} {} in {}",
            s(data, "gate"),
            opens(s(data, "state")).0,
            on(&data["clusters"]),
            s(data, "lead")
        ))
        .fact("Gate", s(data, "gate"))
        .fact("Clusters", list(&data["clusters"]))
        .fact("At", time(&data["at"]))
        .fact("Reason", s(data, "reason")),
        ("override", _) => {
            let o = &data["override"];
            let head = if what == "created" {
                format!(
                    "Override: gate {} {} on {} by {}",
                    s(o, "gate"),
                    opens(s(o, "state")).1,
                    on(&data["clusters"]),
                    s(o, "actor")
                )
            } else {
                let by = data["cancelledBy"]
                    .as_str()
                    .map(|b| format!(" by {b}"))
                    .unwrap_or_default();
                format!(
                    "Override on gate {} ({}) {}{by}",
                    s(o, "gate"),
                    s(o, "state"),
                    s(data, "how")
                )
            };
            Notice::new(head)
                .fact("Gate", s(o, "gate"))
                .fact("Clusters", list(&data["clusters"]))
                .fact("Reason", s(o, "reason"))
                .fact("From", time(&o["startsAt"]))
                .fact(
                    "Until",
                    match (what, time(&o["expiresAt"])) {
                        ("created", t) if t.is_empty() => "cancelled".to_string(),
                        (_, t) => t,
                    },
                )
                .fact("Ended", time(&data["endedAt"]))
        }
        ("rollout", _) => {
            let gate = s(data, "gate");
            let wave = data["wave"].as_i64().unwrap_or(0);
            let head = match what {
                "started" => format!("Rollout of gate {gate} started"),
                "wave_released" => format!(
                    "Rollout of gate {gate} released wave {wave} to {}",
                    on(&data["clusters"])
                ),
                "halted" => format!("Rollout of gate {gate} halted at wave {wave}"),
                "completed" => format!("Rollout of gate {gate} completed"),
                "aborted" => format!("Rollout of gate {gate} aborted at wave {wave}"),
                _ => format!("Rollout of gate {gate} ended at wave {wave}"),
            };
            Notice::new(head)
                .fact("Gate", gate)
                .fact(
                    "Wave",
                    if wave > 0 {
                        wave.to_string()
                    } else {
                        "".into()
                    },
                )
                .fact("Clusters", list(&data["clusters"]))
                .fact("Detail", s(data, "detail"))
                .fact("At", time(&data["at"]))
        }
        ("spoke", _) => Notice::new(format!(
            "Cluster {}: spoke {}",
            s(data, "cluster"),
            if what == "connected" {
                "connected again"
            } else {
                "disconnected"
            }
        ))
        .fact("Cluster", s(data, "cluster"))
        .fact("Last seen", time(&data["lastSeenAt"]))
        .fact("At", time(&data["at"])),
        ("changes", _) => {
            let objects: Vec<String> = data["objects"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|o| {
                            format!(
                                "{} {}/{} ({})",
                                s(o, "kind"),
                                s(o, "namespace"),
                                s(o, "name"),
                                s(o, "revision")
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Notice::new(format!(
                "Changes held on cluster {} by gate {}",
                s(data, "cluster"),
                s(data, "gate")
            ))
            .fact("Cluster", s(data, "cluster"))
            .fact("Gate", s(data, "gate"))
            .fact("Objects", list(&serde_json::json!(objects)))
        }
        ("approval", _) => {
            let r = &data["request"];
            let verb = match what {
                "pending" => "requested",
                "approved" => "approved",
                "rejected" => "rejected",
                "cancelled" => "cancelled",
                _ => "expired",
            };
            let by = match (what, r["decidedBy"].as_str()) {
                ("pending", _) => format!(" by {}", s(r, "requester")),
                (_, Some(b)) if what != "expired" => format!(" by {b}"),
                _ => String::new(),
            };
            Notice::new(format!(
                "Approval {verb}{by}: {} gate {} on {}",
                if s(r, "state") == "open" {
                    "open"
                } else {
                    "close"
                },
                s(r, "gate"),
                on(&data["clusters"])
            ))
            .fact("Gate", s(r, "gate"))
            .fact("Clusters", list(&data["clusters"]))
            .fact("Reason", s(r, "reason"))
            .fact("Ticket", s(r, "ticket"))
            .fact("Requested by", s(r, "requester"))
            .fact("For", s(r, "for"))
            .fact(
                "Approvals",
                match (r["approvals"].as_array(), r["required"].as_u64()) {
                    (Some(a), Some(n)) => format!("{} of {n}", a.len()),
                    _ => String::new(),
                },
            )
            .fact("Decision", s(r, "decisionReason"))
            .fact(
                "Expires",
                if what == "pending" {
                    time(&r["expiresAt"])
                } else {
                    String::new()
                },
            )
        }
        ("calendar", _) => Notice::new(format!(
            "Calendar of gate {} is stale (window {})",
            s(data, "gate"),
            s(data, "window")
        ))
        .fact("Gate", s(data, "gate"))
        .fact("Window", s(data, "window"))
        .fact("Stale since", time(&data["staleSince"]))
        .fact("Last fetch", time(&data["lastFetchAt"]))
        .fact("Error", s(data, "error"))
        .fact("Feed", s(data, "url")),
        ("freeze", _) => {
            let f = &data["freeze"];
            let scope = if f["clusters"].is_null() {
                "every cluster".to_string()
            } else {
                on(&data["clusters"])
            };
            let head = if what == "started" {
                format!("Fleet freeze on {scope} by {}", s(f, "actor"))
            } else {
                let by = f["endedBy"]
                    .as_str()
                    .map(|b| format!(" by {b}"))
                    .unwrap_or_default();
                format!("Fleet freeze on {scope} ended{by}")
            };
            Notice::new(head)
                .fact("Clusters", list(&data["clusters"]))
                .fact("Reason", s(f, "reason"))
                .fact(
                    "Until",
                    match (what, time(&f["expiresAt"])) {
                        ("started", t) if t.is_empty() => "unfrozen".to_string(),
                        ("started", t) => t,
                        _ => String::new(),
                    },
                )
                .fact("Ended", time(&f["endedAt"]))
                .fact("Why ended", s(f, "endReason"))
        }
        ("webhook", "test") => Notice::new(
            "fleetgate test message: this endpoint receives fleetgate notifications".into(),
        )
        .fact("Webhook", s(data, "webhook"))
        .fact("Requested by", s(data, "requestedBy")),
        _ => {
            let mut n = Notice::new(format!("fleetgate {event_type}"));
            if let Some(obj) = data.as_object() {
                for (k, v) in obj.iter().take(MAX_LISTED) {
                    if let Some(text) = v.as_str() {
                        n.facts.push(("Detail", format!("{k}: {text}")));
                    }
                }
            }
            n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edge_names_gate_clusters_reason_and_next_change() {
        let n = notice(
            "gate.closed",
            &json!({"gate": "xmas", "state": "closed", "clusters": ["a", "b"],
                    "reason": "deny window 'freeze' until Mon 2027-01-04 00:00 UTC",
                    "cause": "window", "at": "2026-12-20T00:00:00Z",
                    "nextTransition": "2027-01-04T00:00:00Z"}),
        );
        assert_eq!(n.headline, "Gate xmas closed on 2 clusters");
        assert_eq!(
            n.facts,
            [
                ("Gate", "xmas".to_string()),
                ("Clusters", "a, b".into()),
                (
                    "Reason",
                    "deny window 'freeze' until Mon 2027-01-04 00:00 UTC".into()
                ),
                ("Cause", "window edge".into()),
                ("At", "2026-12-20 00:00 UTC".into()),
                ("Next change", "2027-01-04 00:00 UTC".into()),
            ]
        );
    }

    #[test]
    fn long_cluster_lists_are_cut_and_counted() {
        let names: Vec<String> = (0..500).map(|i| format!("c{i}")).collect();
        let n = notice(
            "gate.opened",
            &json!({"gate": "g", "clusters": names, "cause": "override", "actor": "alice"}),
        );
        assert_eq!(n.headline, "Gate g opened on 500 clusters");
        let clusters = &n.facts.iter().find(|f| f.0 == "Clusters").unwrap().1;
        assert!(clusters.ends_with("c9 and 490 more"), "{clusters}");
        assert!(n.facts.contains(&("Cause", "override by alice".into())));
        assert!(n.facts.contains(&("Next change", "none scheduled".into())));
    }

    #[test]
    fn every_event_type_reads_as_a_sentence() {
        for t in super::super::EVENT_TYPES {
            let n = notice(t, &json!({}));
            assert!(
                !n.headline.starts_with("fleetgate ") || *t == "webhook.test",
                "{t} has its own headline: {}",
                n.headline
            );
        }
        let n = notice(
            "approval.pending",
            &json!({"request": {"gate": "g", "state": "open", "requester": "bob",
                     "reason": "hotfix", "required": 2, "approvals": [],
                     "expiresAt": "2026-11-25T13:00:00Z"}, "clusters": ["a"]}),
        );
        assert_eq!(
            n.headline,
            "Approval requested by bob: open gate g on cluster a"
        );
        assert!(n.facts.contains(&("Approvals", "0 of 2".into())));
    }
}
