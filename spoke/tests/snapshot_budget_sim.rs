//! The largest snapshot the budgets allow reaches the spoke over real gRPC and is enforced:
//! gates at every budget at once (a manifest of `GATE_MANIFEST_MAX_BYTES` with selectors at
//! their term and value budgets, feed windows at their occurrence budget with summaries at
//! theirs), as many as `SNAPSHOT_MAX_BYTES` holds. The hub encodes and the spoke decodes with
//! `GRPC_MAX_MESSAGE_BYTES`; before, the spoke's 4 MiB default refused such a snapshot in a
//! loop and a freeze never reached the cluster.

mod support;

use chrono::{Duration, TimeZone, Utc};
use fleetgate_policy::budgets::{
    CALENDAR_MAX_OCCURRENCES, GATE_MANIFEST_MAX_BYTES, GATE_MAX_OCCURRENCES, GATE_RULE_MAX_BYTES,
    OCCURRENCE_SUMMARY_MAX_BYTES, SELECTOR_MAX_TERMS, SELECTOR_MAX_VALUES, SNAPSHOT_MAX_BYTES,
};
use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1 as pb;
use prost::Message;
use serde_json::json;
use support::*;

/// One gate at every budget: its manifest JSON just under `GATE_MANIFEST_MAX_BYTES`, and
/// `GATE_MAX_OCCURRENCES` feed occurrences with the longest summaries.
fn largest_gate(name: &str) -> pb::GateRule {
    let feeds = GATE_MAX_OCCURRENCES / CALENDAR_MAX_OCCURRENCES;
    let windows: Vec<_> = (0..feeds)
        .map(|i| {
            json!({"name": format!("feed-{i}"), "kind": "deny",
            "calendar": {"url": format!("https://calendar.example.com/{name}/{i}.ics")}})
        })
        .collect();
    let expressions: Vec<_> = (0..SELECTOR_MAX_TERMS)
        .map(|t| {
            let values: Vec<String> = (0..SELECTOR_MAX_VALUES)
                .map(|v| format!("{t:02}-{v:03}-{}", "v".repeat(30)))
                .collect();
            json!({"key": format!("example.com/budget-{t}"), "operator": "NotIn", "values": values})
        })
        .collect();
    let mut manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": name, "annotations": {"pad": ""}},
        "spec": {
            "clusters": {"names": [CLUSTER]},
            "targets": {"kinds": ["Kustomization"], "selector": {"matchExpressions": expressions}},
            "mode": "suspend", "default": "open",
            "windows": windows,
        }
    });
    let used = manifest.to_string().len();
    assert!(
        used < GATE_MANIFEST_MAX_BYTES,
        "selectors alone are {used} bytes"
    );
    manifest["metadata"]["annotations"]["pad"] = json!("p".repeat(GATE_MANIFEST_MAX_BYTES - used));
    let manifest_json = manifest.to_string();
    assert_eq!(manifest_json.len(), GATE_MANIFEST_MAX_BYTES);
    fleetgate_policy::parse_gate_json(manifest.clone())
        .and_then(|g| g.validate())
        .expect("the largest gate is within its budgets");

    let summary = format!(
        "{}…",
        "s".repeat(OCCURRENCE_SUMMARY_MAX_BYTES - '…'.len_utf8())
    );
    assert_eq!(summary.len(), OCCURRENCE_SUMMARY_MAX_BYTES);
    let first = Utc.with_ymd_and_hms(2099, 1, 1, 0, 0, 0).unwrap();
    let calendars = (0..feeds)
        .map(|i| pb::CalendarOccurrences {
            window: format!("feed-{i}"),
            occurrences: (0..CALENDAR_MAX_OCCURRENCES)
                .map(|n| {
                    let start = first + Duration::hours(2 * i64::try_from(n).unwrap());
                    pb::CalendarOccurrence {
                        start: Some(to_timestamp(start)),
                        end: Some(to_timestamp(start + Duration::minutes(59))),
                        summary: summary.clone(),
                    }
                })
                .collect(),
            stale_at: Some(to_timestamp(first + Duration::days(3650))),
        })
        .collect();
    let rule = pb::GateRule {
        name: name.into(),
        version: u64::MAX,
        manifest_json,
        release: None,
        waiting: None,
        opening_fence: None,
        calendars,
    };
    assert!(
        rule.encoded_len() <= GATE_RULE_MAX_BYTES,
        "{} > {GATE_RULE_MAX_BYTES}",
        rule.encoded_len()
    );
    rule
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_snapshot_the_budgets_allow_is_decoded_and_enforced() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    let mut snap = snapshot(3, vec![], vec![]);
    let one = largest_gate("big-0");
    // An entry in `gates` costs its length and a few bytes of tag and length prefix.
    let each = one.encoded_len() + 8;
    let mut i = 0;
    while snap.encoded_len() + each <= SNAPSHOT_MAX_BYTES {
        let mut g = one.clone();
        g.name = format!("big-{i}");
        g.manifest_json =
            g.manifest_json
                .replacen("\"name\":\"big-0\"", &format!("\"name\":\"big-{i}\""), 1);
        snap.gates.push(g);
        i += 1;
    }
    // And a gate that closes `apps`: enforcing the snapshot shows it was decoded.
    snap.gates
        .push(gate_named("close-apps", "suspend", &["apps"], "closed"));
    let size = snap.encoded_len();
    eprintln!("largest snapshot: {} gates, {size} bytes", snap.gates.len());
    assert!(size <= SNAPSHOT_MAX_BYTES + 4096, "{size}");
    assert!(size > 4 * 1024 * 1024, "over tonic's default 4 MiB: {size}");

    let hub = FakeHub::start().await;
    hub.set(snap);
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    spoke
        .report_where("revision 3 enforced", |r| r.revision == 3)
        .await;
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "suspended by close-apps",
        suspended,
    )
    .await;
    spoke.stop().await;
    hub.stop().await;
}
