//! Import layers: no workspace crate has a circle of files importing each other, and no file
//! imports from a layer above its own (the layers each crate declares in `LAYERS`). Reads the
//! sources of every member of the root `Cargo.toml`, so a new crate is covered when it is added.
//! How to read a failure: docs/development.md, "Import layers".

mod check;
mod graph;
#[cfg(test)]
mod self_test;

use std::path::{Path, PathBuf};

use check::Layers;

/// Each crate's layers, lowest first (see `check::Layers`). A crate not listed is checked for
/// circles only.
const LAYERS: &[(&str, Layers)] = &[
    (
        "policy",
        &[
            // Leaves: words and small parsers every other module uses.
            &[
                "src/error.rs",
                "src/budgets.rs",
                "src/text.rs",
                "src/yaml.rs",
                "src/duration.rs",
                "src/dns.rs",
                "src/state.rs",
                "src/selector.rs",
                "src/scope.rs",
                "src/kinds.rs",
                "src/localtime.rs",
                "src/cron.rs",
                "src/recurrence.rs",
            ],
            // The model: the manifest and its parts, overrides and freezes.
            &[
                "src/manifest.rs",
                "src/approval.rs",
                "src/calendar/",
                "src/objects.rs",
                "src/rollout.rs",
                "src/eval.rs",
                "src/freeze.rs",
            ],
            // Validation and compilation.
            &["src/validate.rs", "src/compile.rs"],
            // Evaluation over time, previews, descriptions.
            &["src/"],
            &["src/lib.rs"],
        ],
    ),
    (
        "spoke",
        &[
            // Leaves and the data the planners read.
            &[
                "src/clock.rs",
                "src/error.rs",
                "src/config.rs",
                "src/serve/metrics.rs",
                "src/cluster/text.rs",
                "src/cluster/intern.rs",
                "src/cluster/kinds.rs",
                "src/cluster/flux_object.rs",
                "src/cluster/readiness.rs",
                "src/cluster/observed.rs",
                "src/suspend/annotations.rs",
                "src/hold/marks.rs",
                "src/hold/kinds.rs",
                "src/hold/observed.rs",
                "src/hold/inventory.rs",
                "src/hold/steps.rs",
            ],
            // The pure planners.
            &["src/suspend/plan.rs", "src/hold/plan.rs"],
            // The hub side (snapshot, report) and the cluster side (watches, stores, Events).
            &[
                "src/hub/",
                "src/cluster/",
                "src/hold/watch.rs",
                "src/gates/freeze.rs",
            ],
            // The shared state.
            &["src/context.rs"],
            // The loops that apply plans and talk to the hub and the cluster.
            &[
                "src/controller.rs",
                "src/suspend/",
                "src/hold/",
                "src/gates/",
                "src/serve/",
                "src/hub/connection.rs",
            ],
            &["src/lib.rs", "src/main.rs"],
        ],
    ),
    (
        "sim",
        &[
            // Errors, served types, the store and the rules for one object.
            &[
                "src/error.rs",
                "src/crd.rs",
                "src/apiextensions/crd_object.rs",
                "src/store.rs",
                "src/fields.rs",
                "src/managed.rs",
                "src/selectors.rs",
                "src/query.rs",
                "src/protobuf.rs",
                "src/tls.rs",
                "src/kubeconfig.rs",
                "src/events.rs",
                "src/meta.rs",
                "src/schema.rs",
                "src/builtin.rs",
                "src/rbac.rs",
                "src/write_opts.rs",
                "src/issuer.rs",
            ],
            // One cluster's state.
            &["src/cluster.rs"],
            // The write path.
            &[
                "src/ops.rs",
                "src/kubelet.rs",
                "src/prepare.rs",
                "src/apply.rs",
                "src/patch.rs",
                "src/apiextensions/strategy.rs",
            ],
            // Controllers: apiextensions, the Flux simulator, upstream pushes.
            &["src/apiextensions/", "src/flux/", "src/upstream.rs"],
            // The HTTP API.
            &["src/handlers/", "src/watch.rs"],
            &["src/sim.rs", "src/lib.rs", "src/main.rs"],
        ],
    ),
    (
        "cli",
        &[
            // The grammar, configuration, the hub client, output, shared helpers.
            &["src/"],
            &["src/commands/"],
            &["src/lib.rs", "src/main.rs"],
        ],
    ),
    (
        "hub-core",
        &[
            // Leaves: clock, options' parsing, input checks, token hashing; the identity
            // settings and the token model with the traits adapters implement.
            &[
                "src/clock.rs",
                "src/build_info.rs",
                "src/options.rs",
                "src/validate.rs",
                "src/auth.rs",
                "src/identity/config.rs",
                "src/identity/token.rs",
                "src/identity/provider.rs",
                "src/identity/metrics.rs",
            ],
            // The rollout state machine, then the metrics that read it.
            &["src/rollout/"],
            &["src/metrics/"],
            // The decisions and the event and identity models they produce and consume.
            &["src/service/", "src/notify/", "src/identity/"],
            // The fan-out index over the service's fleet views.
            &["src/fanout/"],
            &["src/lib.rs"],
        ],
    ),
    (
        "hub-adapters",
        &[
            // The outbound client and its rules.
            &["src/egress/"],
            // Each adapter of core's traits, and the workers.
            &[
                "src/identity/",
                "src/admission.rs",
                "src/calendar_sync.rs",
                "src/webhook_delivery.rs",
            ],
            // Wiring: the notifier runs delivery; the defaults build a Service.
            &["src/notifier.rs", "src/defaults.rs"],
            &["src/lib.rs"],
        ],
    ),
];

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ is inside the workspace")
        .to_path_buf()
}

/// The `members = [...]` list of the root `Cargo.toml`.
fn members(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).expect("root Cargo.toml");
    let start = manifest
        .lines()
        .position(|l| l.trim_start().starts_with("members"))
        .expect("the root Cargo.toml lists members");
    let mut list = String::new();
    for line in manifest.lines().skip(start) {
        list.push_str(line.split('#').next().unwrap_or(""));
        if line.contains(']') {
            break;
        }
    }
    let inner = list
        .split_once('[')
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(inner, _)| inner)
        .expect("members = [ ... ]");
    inner
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect()
}

/// The faults of one crate, each naming its files; and the number of circles.
fn crate_faults(dir: &Path, layers: Option<Layers>) -> (Vec<String>, usize) {
    let g = match graph::read_crate(dir) {
        Ok(g) => g,
        Err(e) => return (vec![e], 0),
    };
    if std::env::var("IMPORT_LAYERS_DUMP").is_ok_and(|c| dir.ends_with(c)) {
        for (from, targets) in &g.edges {
            for (to, example) in targets {
                println!("{} -> {}  ({example})", g.files[*from], g.files[*to]);
            }
        }
    }
    let circles = check::circles(&g);
    let mut faults: Vec<String> = circles
        .iter()
        .map(|c| check::describe_circle(&g, c))
        .collect();
    if let Some(layers) = layers {
        faults.extend(check::layer_faults(&g, layers));
    }
    (faults, circles.len())
}

#[test]
fn workspace_crates_have_no_import_circles_and_no_upward_imports() {
    let root = workspace_root();
    let members = members(&root);
    assert!(
        members.len() > 3,
        "members read from Cargo.toml: {members:?}"
    );
    for (name, _) in LAYERS {
        assert!(
            members.iter().any(|m| m == name),
            "LAYERS names `{name}`, which is not a workspace member"
        );
    }
    let mut report = String::new();
    let mut summary = Vec::new();
    for member in &members {
        let layers = LAYERS.iter().find(|(n, _)| n == member).map(|(_, l)| *l);
        let (faults, circles) = crate_faults(&root.join(member), layers);
        summary.push(format!(
            "{member}: {circles} circles, {} faults",
            faults.len()
        ));
        for f in faults {
            report.push_str(&format!("\n  {member}: {f}"));
        }
    }
    println!("{}", summary.join("\n"));
    assert!(
        report.is_empty(),
        "import circles or upward imports (docs/development.md, \"Import layers\"):{report}"
    );
}
