//! What the code and the deploy manifests define, for the docs to be checked
//! against: the programs' flags (clap's own definitions where the program has
//! a library, else its `#[arg]` attributes), the Prometheus metrics the hub
//! and the spoke register, the Kubernetes resources kubectl can name, and the
//! string literals of the sources.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use clap::CommandFactory;
use serde_json::Value;

/// Every `.rs` file under `dir`, recursively.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    files(dir, &|p| p.extension().is_some_and(|e| e == "rs"))
}

/// Every file under `dir` that `keep` accepts.
pub fn files(dir: &Path, keep: &dyn Fn(&Path) -> bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files(&p, keep));
        } else if keep(&p) {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The long flags (`--name`) of a clap command and all its subcommands.
fn long_flags(cmd: &clap::Command, out: &mut BTreeSet<String>) {
    for a in cmd.get_arguments() {
        if let Some(l) = a.get_long() {
            out.insert(format!("--{l}"));
        }
        for l in a.get_all_aliases().unwrap_or_default() {
            out.insert(format!("--{l}"));
        }
    }
    for s in cmd.get_subcommands() {
        long_flags(s, out);
    }
    out.insert("--help".into());
    out.insert("--version".into());
}

/// The long flags a binary-only program declares: each `#[arg(...)]` with
/// `long = "x"`, or a bare `long` on a field `name: …` (`--name`, with `_`
/// as `-`), in every source file of the crate.
fn scanned_flags(src: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::from(["--help".to_string(), "--version".to_string()]);
    for f in rust_files(src) {
        let text = std::fs::read_to_string(&f).expect("readable source");
        let mut rest = text.as_str();
        while let Some(i) = rest.find("#[arg(") {
            rest = &rest[i + 6..];
            let attr = &rest[..rest.find(")]").unwrap_or(rest.len())];
            if let Some(j) = attr.find("long = \"") {
                let name = &attr[j + 8..];
                out.insert(format!("--{}", &name[..name.find('"').unwrap_or(0)]));
            } else if attr.split([',', ' ', '(']).any(|t| t == "long") {
                // The field the attribute is on: the next `name:` after `)]`.
                let after = &rest[attr.len()..];
                let field = after
                    .lines()
                    .skip(1)
                    .map(str::trim)
                    .find(|l| !l.starts_with("#[") && !l.starts_with("///") && l.contains(':'));
                if let Some(field) = field {
                    let name = field
                        .trim_start_matches("pub ")
                        .split(':')
                        .next()
                        .unwrap_or("");
                    out.insert(format!("--{}", name.trim().replace('_', "-")));
                }
            }
        }
    }
    out
}

/// A program the docs show command lines of.
pub enum Program {
    /// Parsed with the program's own clap definition.
    Clap(Box<clap::Command>),
    /// Only its flags are known (a binary without a library).
    Flags(BTreeSet<String>),
}

/// The programs by binary name.
pub fn programs(root: &Path) -> BTreeMap<&'static str, Program> {
    BTreeMap::from([
        (
            "fleetgate",
            Program::Clap(Box::new(fleetgate::args::Cli::command())),
        ),
        (
            "fleetgate-hub",
            Program::Clap(Box::new(fleetgate_hub::config::Cli::command())),
        ),
        (
            "fleetgate-spoke",
            Program::Clap(Box::new(fleetgate_spoke::Config::command())),
        ),
        (
            "fleetgate-sim",
            Program::Flags(scanned_flags(&root.join("sim/src"))),
        ),
        (
            "fleetgate-demo",
            Program::Flags(scanned_flags(&root.join("demo/src"))),
        ),
        (
            "fleetgate-bench",
            Program::Flags(scanned_flags(&root.join("bench/src"))),
        ),
    ])
}

/// Every long flag of every fleetgate program.
pub fn all_flags(programs: &BTreeMap<&'static str, Program>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for p in programs.values() {
        match p {
            Program::Clap(c) => long_flags(c, &mut out),
            Program::Flags(f) => out.extend(f.iter().cloned()),
        }
    }
    out
}

/// The metric names the hub (its crates) and the spoke register, with their prefixes:
/// `Registry::with_prefix("fleetgate_hub")` for the hub's crates, a
/// `sub_registry_with_prefix("grpc")` for what a file registers after it.
pub fn metrics(root: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (krate, prefix) in [
        ("hub", "fleetgate_hub"),
        ("hub-store", "fleetgate_hub"),
        ("hub-core", "fleetgate_hub"),
        ("hub-adapters", "fleetgate_hub"),
        ("hub-api", "fleetgate_hub"),
        ("spoke", "fleetgate_spoke"),
    ] {
        if !root.join(krate).join("src").is_dir() {
            continue;
        }
        for f in rust_files(&root.join(krate).join("src")) {
            let text = std::fs::read_to_string(&f).expect("readable source");
            let sub = text
                .find("sub_registry_with_prefix(\"")
                .map(|i| (i, literal_at(&text[i + 26..])));
            let mut rest = 0;
            while let Some(i) = text[rest..].find("register(") {
                let at = rest + i;
                rest = at + 9;
                let args = text[rest..].trim_start();
                if !args.starts_with('"') {
                    continue;
                }
                let name = literal_at(&args[1..]);
                let full = match &sub {
                    Some((s, p)) if *s < at => format!("{prefix}_{p}_{name}"),
                    _ => format!("{prefix}_{name}"),
                };
                out.insert(full);
            }
        }
    }
    out
}

fn literal_at(s: &str) -> String {
    s[..s.find('"').unwrap_or(0)].to_string()
}

/// Whether `name` is a series of a registered metric: the metric itself or
/// its OpenMetrics counter (`_total`) and histogram (`_bucket`, `_sum`,
/// `_count`) series.
pub fn is_metric(metrics: &BTreeSet<String>, name: &str) -> bool {
    metrics.contains(name)
        || ["_total", "_bucket", "_sum", "_count"]
            .iter()
            .any(|s| name.strip_suffix(s).is_some_and(|b| metrics.contains(b)))
}

/// A resource kubectl can name: by plural, singular, short name or kind.
#[derive(Debug, Clone)]
pub struct Resource {
    pub namespaced: bool,
    /// The `kubectl get` columns (name, priority) after NAME, for CRDs.
    pub columns: Vec<(String, i64)>,
}

/// The resources of the CRDs in `deploy/` and the simulator's Flux CRDs,
/// and the built-in kinds the docs use.
pub fn resources(root: &Path) -> BTreeMap<String, Resource> {
    let mut out = BTreeMap::new();
    let yaml = |p: &Path| p.extension().is_some_and(|e| e == "yaml" || e == "yml");
    let mut sources = files(&root.join("deploy"), &yaml);
    sources.extend(files(&root.join("sim/crds"), &yaml));
    for f in sources {
        let text = std::fs::read_to_string(&f).expect("readable manifest");
        let Ok(docs) = fleetgate_policy::yaml::from_str_documents::<Value>(&text) else {
            continue;
        };
        for crd in docs
            .iter()
            .filter(|d| d["kind"] == "CustomResourceDefinition")
        {
            let names = &crd["spec"]["names"];
            let version = crd["spec"]["versions"]
                .as_array()
                .and_then(|v| v.iter().find(|v| v["served"] != false))
                .cloned()
                .unwrap_or(Value::Null);
            let columns = version["additionalPrinterColumns"]
                .as_array()
                .map(|cols| {
                    cols.iter()
                        .map(|c| {
                            (
                                c["name"].as_str().unwrap_or("").to_uppercase(),
                                c["priority"].as_i64().unwrap_or(0),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            let r = Resource {
                namespaced: crd["spec"]["scope"] == "Namespaced",
                columns,
            };
            let group = crd["spec"]["group"].as_str().unwrap_or("");
            let mut keys: Vec<String> = ["plural", "singular", "kind"]
                .iter()
                .filter_map(|k| names[k].as_str())
                .map(str::to_lowercase)
                .collect();
            keys.extend(
                names["shortNames"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .map(str::to_string),
            );
            if let Some(p) = names["plural"].as_str() {
                keys.push(format!("{p}.{group}"));
            }
            for k in keys {
                out.insert(k, r.clone());
            }
        }
    }
    // Built-in kinds the docs name (as kubectl api-resources lists them).
    for (names, namespaced) in [
        (&["pods", "pod", "po"][..], true),
        (&["deployments", "deployment", "deploy"], true),
        (&["statefulsets", "statefulset", "sts"], true),
        (&["daemonsets", "daemonset", "ds"], true),
        (&["services", "service", "svc"], true),
        (&["configmaps", "configmap", "cm"], true),
        (&["secrets", "secret"], true),
        (&["serviceaccounts", "serviceaccount", "sa"], true),
        (&["events", "event", "ev"], true),
        (&["leases", "lease"], true),
        (&["roles", "role", "rolebindings", "rolebinding"], true),
        (&["namespaces", "namespace", "ns"], false),
        (
            &[
                "clusterroles",
                "clusterrole",
                "clusterrolebindings",
                "clusterrolebinding",
            ],
            false,
        ),
        (
            &[
                "customresourcedefinitions",
                "customresourcedefinition",
                "crd",
                "crds",
            ],
            false,
        ),
    ] {
        for n in names {
            out.insert(
                n.to_string(),
                Resource {
                    namespaced,
                    columns: Vec::new(),
                },
            );
        }
    }
    out
}

/// The text of every Rust source (programs, tests, benches) and every
/// manifest and script a name in the docs may come from.
pub fn corpus(root: &Path) -> String {
    let ours = |p: &Path| {
        let s = p.to_string_lossy();
        !s.contains("/target/")
            && (p
                .extension()
                .is_some_and(|e| e == "rs" || e == "yaml" || e == "sh")
                || s.ends_with(".ci/run"))
    };
    let mut text = String::new();
    for f in files(root, &ours) {
        text.push_str(&std::fs::read_to_string(f).unwrap_or_default());
    }
    text
}
