//! `status`: the fleet at a glance — counts, each gate's open/closed split,
//! and one row per cluster (like `flux get`: may it change now, what holds
//! it, what is waiting, when the next transition is) — or one cluster in
//! detail with its governed objects and the objects held inside its
//! Kustomizations (holdObjects gates).

use serde_json::Value;

use crate::args::{Format, StatusArgs};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, args: &StatusArgs, format: Format) -> Result<()> {
    if let Some(name) = &args.cluster {
        let v = client
            .get(&format!("/clusters/{}/status", seg(name)), &[])
            .await?;
        return output::print(format, &v, |v| render_cluster(v, args.gate.as_deref()));
    }
    if let Some(sel) = &args.selector {
        // A usage error before any request, like the other `-l` commands.
        fleetgate_policy::LabelSelector::parse(sel)
            .map_err(|e| Error::Usage(format!("--selector: {e}")))?;
    }
    // One request: the fleet summary and every (selected) cluster's gates.
    let query: Vec<(&str, String)> = args
        .selector
        .iter()
        .map(|s| ("selector", s.clone()))
        .collect();
    let v = client.get("/status/clusters", &query).await?;
    output::print(format, &v, |v| render_fleet(v, args.gate.as_deref()))
}

fn gates_of(c: &Value) -> Vec<Value> {
    c.get("gates")
        .and_then(|g| g.as_array())
        .cloned()
        .unwrap_or_default()
}

fn spoke(cluster: &Value) -> &'static str {
    match cluster.get("connected") {
        Some(Value::Bool(true)) => "connected",
        Some(Value::Bool(false)) => "disconnected",
        _ => "?",
    }
}

fn strs(v: Option<&Value>) -> String {
    v.and_then(|x| x.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn n(v: &Value, ptr: &str) -> String {
    v.pointer(ptr).map(|x| x.to_string()).unwrap_or_default()
}

fn render_fleet(v: &Value, gate: Option<&str>) -> String {
    let s = &v["summary"];
    let mut out = format!(
        "clusters: {} ({} connected, {} disconnected)   may change now: {}   closed: {}   with held changes: {}\n\
         objects: {} governed, {} suspended, {} held   fleet revision {}\n         held objects: {} ({} with changes waiting, {} by a person) on {} clusters\n\n",
        n(s, "/clusters/total"),
        n(s, "/clusters/connected"),
        n(s, "/clusters/disconnected"),
        n(s, "/clusters/open"),
        n(s, "/clusters/closed"),
        n(s, "/clusters/withHeld"),
        n(s, "/objects/governed"),
        n(s, "/objects/suspended"),
        n(s, "/objects/held"),
        n(s, "/revision"),
        n(s, "/objects/heldObjects"),
        n(s, "/objects/heldObjectsWaiting"),
        n(s, "/objects/heldObjectsByPerson"),
        n(s, "/clusters/withHeldObjects"),
    );
    let mut gates = Table::new(&["GATE", "CLUSTERS", "OPEN", "CLOSED", "HELD OBJECTS"]);
    for g in s
        .get("gates")
        .and_then(|g| g.as_array())
        .into_iter()
        .flatten()
        .filter(|g| gate.is_none_or(|n| output::s(g, "gate") == n))
    {
        gates.row(vec![
            output::s(g, "gate"),
            output::s(g, "clusters"),
            output::s(g, "open"),
            output::s(g, "closed"),
            output::s(g, "heldObjects"),
        ]);
    }
    if !gates.is_empty() {
        out.push_str(&gates.render());
        out.push('\n');
    }
    let mut t = Table::new(&[
        "CLUSTER",
        "SPOKE",
        "READY",
        "CLOSED BY",
        "HELD",
        "HELD OBJECTS",
        "NEXT",
        "MESSAGE",
    ]);
    for c in v
        .get("clusters")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
    {
        let gates = gates_of(c);
        if let Some(g) = gate
            && !gates.iter().any(|x| output::s(x, "gate") == g)
        {
            continue;
        }
        let open = c.get("open").and_then(|o| o.as_bool()).unwrap_or(true);
        // The message is the reason of the first closed gate (or the first gate).
        let first = gates
            .iter()
            .find(|g| output::s(g, "state") == "closed")
            .or(gates.first());
        t.row(vec![
            c.pointer("/cluster/name")
                .and_then(|x| x.as_str())
                .unwrap_or_default()
                .to_string(),
            spoke(&c["cluster"]).into(),
            if open { "True" } else { "False" }.into(),
            strs(c.get("closedBy")),
            n(c, "/counts/held"),
            n(c, "/counts/heldObjects"),
            or_dash(output::s(c, "nextTransition")),
            first
                .map(|g| format!("{}: {}", output::s(g, "gate"), output::s(g, "reason")))
                .unwrap_or_else(|| "no gates".into()),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "No clusters.\n".into()
    } else {
        t.render()
    });
    out
}

/// "—" for a time that is absent: the state does not change within the look-ahead.
fn or_dash(s: String) -> String {
    if s.is_empty() { "—".into() } else { s }
}

/// The live open/close requests made inside the cluster (annotations on its
/// Gate objects), with the Kubernetes user; cancel one with
/// `fleetgate gate cancel GATE ID`.
fn render_local_requests(v: &Value, gate: Option<&str>) -> String {
    let requests: Vec<&Value> = v
        .get("localRequests")
        .and_then(|o| o.as_array())
        .into_iter()
        .flatten()
        .filter(|r| gate.is_none_or(|g| output::s(r, "gate") == g))
        .collect();
    if requests.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&["REQUEST", "GATE", "BY", "AT", "UNTIL", "REASON", "ID"]);
    for r in requests {
        let action = if output::s(r, "state") == "open" {
            "open"
        } else {
            "close"
        };
        t.row(vec![
            action.to_string(),
            output::s(r, "gate"),
            or_dash(output::s(r, "requestedBy")),
            output::s(r, "createdAt"),
            or_dash(output::s(r, "expiresAt")),
            output::s(r, "reason"),
            output::s(r, "id"),
        ]);
    }
    format!(
        "\nRequests made in the cluster (cancel: fleetgate gate cancel GATE ID):\n{}",
        t.render()
    )
}

fn render_cluster(v: &Value, gate: Option<&str>) -> String {
    let c = &v["cluster"];
    let open = v.get("open").and_then(|o| o.as_bool()).unwrap_or(true);
    let mut out = format!(
        "cluster {}   spoke: {} {}   last seen: {}   labels: {}\n\
         may change now: {}   next change: {}\n\n",
        output::s(c, "name"),
        spoke(c),
        output::s(c, "spokeVersion"),
        match output::s(c, "lastSeenAt") {
            s if s.is_empty() => "never".to_string(),
            s => s,
        },
        output::labels(c.get("labels")),
        if open {
            "yes".to_string()
        } else {
            format!("no (closed by {})", strs(v.get("closedBy")))
        },
        or_dash(output::s(v, "nextTransition")),
    );
    let mut t = Table::new(&["GATE", "STATE", "HELD", "HELD OBJECTS", "NEXT", "REASON"]);
    for g in gates_of(v)
        .iter()
        .filter(|g| gate.is_none_or(|n| output::s(g, "gate") == n))
    {
        t.row(vec![
            output::s(g, "gate"),
            output::s(g, "state"),
            output::s(g, "held"),
            output::s(g, "heldObjects"),
            output::s(g, "nextTransition"),
            output::s(g, "reason"),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "No gates apply to this cluster.\n".into()
    } else {
        t.render()
    });
    out.push_str(&render_local_requests(v, gate));
    let objects: Vec<&Value> = v
        .get("objects")
        .and_then(|o| o.as_array())
        .into_iter()
        .flatten()
        .filter(|o| gate.is_none_or(|g| strs(o.get("gates")).split(',').any(|x| x == g)))
        .collect();
    if !objects.is_empty() {
        out.push('\n');
        let mut t = Table::new(&[
            "KIND",
            "NAMESPACE",
            "NAME",
            "SUSPENDED",
            "BY",
            "HELD",
            "APPLIED",
            "NEWEST",
        ]);
        for o in objects {
            let suspended = match (o.get("suspended"), o.get("suspendedByHuman")) {
                // fleetgate.io/ignore: "true": the gates target it, fleetgate leaves it be.
                _ if o.get("ignored") == Some(&Value::Bool(true)) => "ignored".to_string(),
                (_, Some(Value::Bool(true))) => "by hand".to_string(),
                (Some(Value::Bool(true)), _) => "yes".to_string(),
                _ => "no".to_string(),
            };
            t.row(vec![
                output::s(o, "kind"),
                output::s(o, "namespace"),
                output::s(o, "name"),
                suspended,
                strs(o.get("suspendedBy")),
                output::s(o, "held"),
                output::s(o, "lastAppliedRevision"),
                output::s(o, "newestSourceRevision"),
            ]);
        }
        out.push_str(&t.render());
    }
    out.push_str(&held_objects(v, gate));
    out
}

/// The objects inside the cluster's Kustomizations that holdObjects gates
/// select (held ones first, as the hub orders them).
fn held_objects(v: &Value, gate: Option<&str>) -> String {
    let held: Vec<&Value> = v
        .get("heldObjects")
        .and_then(|o| o.as_array())
        .into_iter()
        .flatten()
        .filter(|o| gate.is_none_or(|g| strs(o.get("gates")).split(',').any(|x| x == g)))
        .collect();
    if held.is_empty() {
        return String::new();
    }
    let mut t = Table::new(&[
        "HELD OBJECT",
        "NAMESPACE",
        "NAME",
        "KUSTOMIZATION",
        "HELD BY",
        "SINCE",
        "WAITING",
    ]);
    for o in held {
        let kind = match output::s(o, "group") {
            g if g.is_empty() => output::s(o, "kind"),
            g => format!("{}.{g}", output::s(o, "kind")),
        };
        let by = match (strs(o.get("heldBy")), o.get("heldByPerson")) {
            (gates, _) if !gates.is_empty() => gates,
            (_, Some(Value::Bool(true))) => "a person".into(),
            _ => "— (not held)".into(),
        };
        let waiting = o.get("newerRevisionApplied") == Some(&Value::Bool(true));
        t.row(vec![
            kind,
            output::s(o, "namespace"),
            output::s(o, "name"),
            format!(
                "{}/{}",
                output::s(o, "kustomizationNamespace"),
                output::s(o, "kustomizationName")
            ),
            by,
            or_dash(output::s(o, "heldSinceRevision")),
            if waiting { "yes" } else { "no" }.into(),
        ]);
    }
    format!("\n{}", t.render())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn cluster_shows_held_objects() {
        let v = json!({
            "cluster": {"name": "prod-1", "connected": true, "labels": {}},
            "open": false, "closedBy": ["nginx-window"],
            "gates": [{"gate": "nginx-window", "state": "closed", "held": 0, "heldObjects": 1,
                       "reason": "default (closed)"}],
            "objects": [],
            "heldObjects": [
                {"group": "apps", "kind": "Deployment", "namespace": "nginx", "name": "nginx",
                 "kustomizationNamespace": "flux-system", "kustomizationName": "apps",
                 "gates": ["nginx-window"], "heldBy": ["nginx-window"], "heldByPerson": false,
                 "heldSinceRevision": "main@sha1:aaa", "newerRevisionApplied": true},
                {"group": "", "kind": "Service", "namespace": "nginx", "name": "legacy",
                 "kustomizationNamespace": "flux-system", "kustomizationName": "apps",
                 "gates": ["nginx-window"], "heldBy": [], "heldByPerson": true,
                 "heldSinceRevision": null, "newerRevisionApplied": false}
            ]
        });
        let out = render_cluster(&v, None);
        let row = out
            .lines()
            .find(|l| l.starts_with("Deployment.apps"))
            .unwrap();
        for cell in [
            "nginx",
            "flux-system/apps",
            "nginx-window",
            "main@sha1:aaa",
            "yes",
        ] {
            assert!(row.contains(cell), "{cell} missing in {row:?}\n{out}");
        }
        let row = out.lines().find(|l| l.starts_with("Service ")).unwrap();
        assert!(row.contains("a person") && row.ends_with("no"), "{row:?}");
        // A gate filter that selects nothing hides the list.
        assert!(!render_cluster(&v, Some("other")).contains("HELD OBJECT "));
    }

    #[test]
    fn a_cluster_lists_the_requests_made_in_it_with_their_ids() {
        let status = json!({
            "cluster": {"name": "edge-1", "labels": {}},
            "open": false, "closedBy": ["sre-approval"],
            "gates": [{"gate": "sre-approval", "state": "closed", "held": 0, "reason": "override"}],
            "objects": [],
            "localRequests": [{
                "id": "0b5c1f7e-0000-4000-8000-000000000001", "gate": "sre-approval",
                "state": "closed", "requestedBy": "alice", "requestedIn": "edge-1",
                "createdAt": "2026-11-24T10:00:00Z", "expiresAt": "2026-11-24T11:00:00Z",
                "reason": "incident 7"
            }]
        });
        let text = render_cluster(&status, None);
        assert!(text.contains("Requests made in the cluster"), "{text}");
        let row = text
            .lines()
            .find(|l| l.contains("alice"))
            .expect("a row for the request");
        for part in [
            "close",
            "sre-approval",
            "incident 7",
            "0b5c1f7e-0000-4000-8000-000000000001",
        ] {
            assert!(row.contains(part), "{part} not in {row}");
        }
        assert!(!render_cluster(&status, Some("other")).contains("Requests made"));
    }
}
