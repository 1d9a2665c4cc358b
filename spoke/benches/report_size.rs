//! Benchmark (prints numbers, asserts nothing): what the Flux inventory (issue 38, impact
//! preview) adds to a spoke's status report, which carries it only on a stream's first
//! report and after it changed. N Flux objects (default 2,000;
//! `FLEETGATE_BENCH_OBJECTS`): Kustomizations with Flux's usual labels, one in ten targeted by
//! a gate, each with its GitRepository. Prints the encoded report (all parts) of a steady
//! cluster (inventory built and compared, not sent) and of a new stream or a changed inventory
//! (sent), the part count, and the CPU time to build, compare, encode and split it (median of
//! 31 runs; other builds on the machine add noise). Pure CPU, no cluster.
//! Run: `cargo bench --workspace --bench report_size --profile dev`.

use std::{collections::BTreeMap, sync::Arc, time::Instant};

use chrono::Utc;
use fleetgate_policy::{FluxKind, LabelSelector, Mode, Targets};
use fleetgate_proto::report_parts::{PART_BYTES, split};
use fleetgate_spoke::{
    cluster::observed::{ObjectKey, ObservedObject},
    hub::report::{InventoryEntry, InventorySent, Report},
    suspend::plan::{GateView, plan},
};
use prost::Message;

fn objects(n: usize) -> Vec<ObservedObject> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n / 2 {
        let team = format!("team-{}", i % 40);
        let labels: BTreeMap<String, String> = [
            ("app.kubernetes.io/part-of".to_owned(), team.clone()),
            (
                "kustomize.toolkit.fluxcd.io/name".to_owned(),
                "flux-system".to_owned(),
            ),
            (
                "kustomize.toolkit.fluxcd.io/namespace".to_owned(),
                "flux-system".to_owned(),
            ),
            (
                "tier".to_owned(),
                if i % 10 == 0 { "prod" } else { "dev" }.to_owned(),
            ),
        ]
        .into();
        let repo = ObjectKey::new(FluxKind::GitRepository, &team, format!("repo-{i:05}"));
        let base = |key: ObjectKey| ObservedObject {
            key,
            labels: Arc::new(labels.clone()),
            resource_version: Some("1".into()),
            suspended: false,
            suspended_by: None,
            freeze_reason: None,
            source_refs: vec![],
            last_applied_revision: Some(format!("main@sha1:{i:040}").into()),
            artifact_revision: None,
            ignored: false,
            nesting: Default::default(),
            readiness: Default::default(),
            inventory: None,
        };
        let mut ks = base(ObjectKey::new(
            FluxKind::Kustomization,
            &team,
            format!("app-{i:05}"),
        ));
        ks.source_refs = vec![repo.clone()];
        let mut git = base(repo);
        git.artifact_revision = Some(format!("main@sha1:{i:040}").into());
        out.push(ks);
        out.push(git);
    }
    out
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::var("FLEETGATE_BENCH_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let objects = objects(n);
    let gates = [GateView {
        name: "prod-window".into(),
        mode: Mode::Suspend,
        targets: Targets {
            kinds: vec![FluxKind::Kustomization],
            selector: Some(LabelSelector {
                match_labels: [("tier".to_owned(), "prod".to_owned())].into(),
                match_expressions: vec![],
            }),
            ..Targets::default()
        },
        objects: None,
        open: false,
        reason: "bench".into(),
        warn: false,
    }];
    println!("report_size: {n} Flux objects, one gate targeting tier=prod");
    // The spoke builds the inventory with every report and sends it only when the stream
    // has not carried it yet or it changed (`InventorySent`).
    let inventory: Vec<InventoryEntry> = objects.iter().map(InventoryEntry::of).collect();
    let mut carried = InventorySent::default();
    let digest = carried.due(&Report {
        inventory,
        ..Report::default()
    });
    carried.sent(digest.expect("a new stream carries it"));
    for steady in [true, false] {
        let mut times = Vec::new();
        let (mut bytes, mut parts, mut governed) = (0, 0, 0);
        for _ in 0..31 {
            let start = Instant::now();
            let p = plan(&gates, &objects);
            governed = p.report.len();
            let report = Report {
                revision: 1,
                objects: p.report,
                held_objects: vec![],
                inventory: objects.iter().map(InventoryEntry::of).collect(),
            };
            let fresh = InventorySent::default();
            let stream = if steady { &carried } else { &fresh };
            let with_inventory = stream.due(&report).is_some();
            assert_eq!(with_inventory, !steady);
            let message = report.to_proto(0, Utc::now(), with_inventory);
            let split_parts = split(message, PART_BYTES);
            let encoded: Vec<Vec<u8>> = split_parts.iter().map(Message::encode_to_vec).collect();
            times.push(start.elapsed().as_secs_f64() * 1e3);
            bytes = encoded.iter().map(Vec::len).sum::<usize>();
            parts = encoded.len();
        }
        println!(
            "  {:<38} governed {governed:>5}  encoded {bytes:>9} B in {parts:>4} parts  plan+build+encode {:.2} ms (median of 31)",
            if steady {
                "steady (inventory unchanged: not sent)"
            } else {
                "new stream or changed (inventory sent)"
            },
            median(times)
        );
    }
}
