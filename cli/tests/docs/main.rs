//! The docs cannot drift from the code. Over README.md and every
//! `docs/*.md`: each relative link and `#anchor` resolves (GitHub's slug
//! rules); each `fleetgate …` command line parses with the CLI's own clap
//! definition, and the hub's and the spoke's with theirs; each `--flag` the
//! prose names belongs to a fleetgate program; each resource a `kubectl`
//! line names is a kind the CRDs in `deploy/` and `sim/crds/` or Kubernetes
//! define, with the columns `kubectl get` prints; each file a command reads
//! exists; each metric, ConfigMap and `FLEETGATE_*` variable named exists in
//! the code or the manifests. The shipped alert rules name real metrics too.

mod code;
mod markdown;
mod shell;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use code::Program;
use markdown::Doc;
use shell::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

fn fail_on(problems: Vec<String>, what: &str) {
    assert!(
        problems.is_empty(),
        "{} {what}:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}

#[test]
fn links_and_anchors_resolve() {
    let root = root();
    let docs = markdown::load(&root);
    let mut problems = Vec::new();
    for doc in &docs {
        let dir = doc.path.parent().unwrap_or(Path::new(""));
        for link in &doc.links {
            let target = link.text.as_str();
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
            let (file, anchors) = if path.is_empty() {
                (doc.path.clone(), Some(&doc.anchors))
            } else {
                let file = normalize(&dir.join(path));
                if !root.join(&file).exists() {
                    problems.push(format!("{}: {target}: no such file", doc.at(link.line)));
                    continue;
                }
                let anchors = docs.iter().find(|d| d.path == file).map(|d| &d.anchors);
                (file, anchors)
            };
            if anchor.is_empty() {
                continue;
            }
            match anchors {
                Some(a) if a.contains(anchor) => {}
                Some(_) => problems.push(format!(
                    "{}: {target}: no heading '#{anchor}' in {}",
                    doc.at(link.line),
                    file.display()
                )),
                None => problems.push(format!(
                    "{}: {target}: an anchor into a file that is not a checked doc",
                    doc.at(link.line)
                )),
            }
        }
    }
    fail_on(problems, "broken links");
}

/// `a/b/../c` → `a/c` (without touching the file system).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}

/// A command as the docs show it, and where.
struct Shown {
    at: String,
    command: Command,
    /// Variables the code block exports before it (`export DATABASE_URL=…`).
    exported: Vec<String>,
    /// From a code block (a complete command) rather than prose (which may
    /// name a command without its required arguments).
    complete: bool,
}

/// Every shell command in the docs: the commands of shell code blocks, and
/// inline code spans that are commands. In the CLI guide, spans that start
/// with a subcommand (its command table) are `fleetgate` commands.
fn shown_commands(docs: &[Doc]) -> Vec<Shown> {
    let subcommands = [
        "gate ",
        "cluster ",
        "token ",
        "rollout ",
        "status",
        "audit",
        "completion ",
    ];
    let mut out = Vec::new();
    // The history of measurements quotes commands as they were then.
    for doc in docs
        .iter()
        .filter(|d| !d.path.ends_with("performance-history.md"))
    {
        for b in &doc.blocks {
            let prompted = match b.lang.as_str() {
                "sh" | "bash" | "shell" | "console" => false,
                "text" | "" => true,
                _ => continue,
            };
            let commands = shell::commands(&b.code, prompted);
            let exported: Vec<String> = commands
                .iter()
                .filter(|c| c.words.first().is_some_and(|w| w == "export"))
                .flat_map(|c| {
                    c.words[1..]
                        .iter()
                        .filter_map(|w| w.split_once('='))
                        .map(|(n, _)| n.to_string())
                })
                .collect();
            for command in commands {
                out.push(Shown {
                    at: doc.at(b.line),
                    command,
                    exported: exported.clone(),
                    complete: true,
                });
            }
        }
        for s in &doc.spans {
            let mut text = s.text.clone();
            if doc.path.ends_with("cli.md") && subcommands.iter().any(|c| text.starts_with(c)) {
                text = format!("fleetgate {text}");
            }
            for command in shell::split(&text) {
                out.push(Shown {
                    at: doc.at(s.line),
                    command,
                    exported: Vec::new(),
                    complete: false,
                });
            }
        }
    }
    out
}

/// A synopsis made concrete: `[optional parts]` dropped, the first of each
/// `a|b` alternative kept, `…` removed.
fn concrete(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut skip_alternative = false;
    for w in words {
        if skip_alternative {
            skip_alternative = false;
            continue;
        }
        let opens = w.matches('[').count();
        let closes = w.matches(']').count();
        if depth > 0 || w.starts_with('[') {
            depth = (depth + opens).saturating_sub(closes);
            continue;
        }
        if w == "|" || w == "\\|" {
            skip_alternative = true;
            continue;
        }
        let w = w.replace("\\|", "|").replace('…', "");
        let w = w.split('|').next().unwrap_or("").to_string();
        if !w.is_empty() {
            out.push(w);
        }
    }
    out
}

/// A placeholder: `NAME`, `T`, `<dir>`, `fgs_…`.
fn placeholder(word: &str) -> bool {
    let w = word.trim_matches(|c| c == '"' || c == '\'');
    (!w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit()))
        || w.contains('<')
        || w.contains('…')
        || w.contains("...")
}

#[test]
fn fleetgate_command_lines_parse() {
    let root = root();
    let docs = markdown::load(&root);
    let programs = code::programs(&root);
    let mut problems = Vec::new();
    let mut parsed = 0;
    for shown in shown_commands(&docs) {
        let words = concrete(&shown.command.words);
        let Some((program, args)) = program_and_args(&words) else {
            continue;
        };
        let Some(p) = programs.get(program.as_str()) else {
            continue;
        };
        parsed += 1;
        match p {
            Program::Clap(cmd) => {
                let argv = std::iter::once(program.clone()).chain(args.iter().cloned());
                if let Err(e) = cmd.clone().try_get_matches_from(argv) {
                    use clap::error::ErrorKind as K;
                    let ok = match e.kind() {
                        K::DisplayHelp | K::DisplayVersion => true,
                        // Prose names a command without all it needs; it must
                        // still name real subcommands and flags.
                        _ if !shown.complete => !matches!(
                            e.kind(),
                            K::InvalidSubcommand | K::UnknownArgument | K::NoEquals
                        ),
                        K::MissingRequiredArgument => {
                            missing_come_from_env(cmd, &e, &shown.exported)
                        }
                        K::ValueValidation | K::InvalidValue => args
                            .iter()
                            .any(|a| placeholder(a) && e.to_string().contains(a.as_str())),
                        _ => false,
                    };
                    if !ok {
                        let first = e.to_string().lines().next().unwrap_or("").to_string();
                        problems.push(format!("{}: `{}`: {first}", shown.at, words.join(" ")));
                    }
                }
            }
            Program::Flags(flags) => {
                for a in &args {
                    let flag = a.split('=').next().unwrap_or("");
                    if flag.starts_with("--") && !flags.contains(flag) {
                        problems.push(format!(
                            "{}: `{}`: no flag {flag}",
                            shown.at,
                            words.join(" ")
                        ));
                    }
                }
            }
        }
    }
    assert!(
        parsed > 40,
        "only {parsed} fleetgate command lines found: is the reader broken?"
    );
    fail_on(problems, "command lines that do not parse");
}

/// Whether every required argument clap misses has an environment variable
/// the code block exports (`export DATABASE_URL=…` before `fleetgate-hub serve`).
fn missing_come_from_env(cmd: &clap::Command, e: &clap::Error, exported: &[String]) -> bool {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::Strings(missing)) = e.get(ContextKind::InvalidArg) else {
        return false;
    };
    fn env_of(cmd: &clap::Command, long: &str) -> Option<String> {
        cmd.get_arguments()
            .find(|a| a.get_long() == Some(long))
            .and_then(|a| a.get_env())
            .map(|e| e.to_string_lossy().into_owned())
            .or_else(|| cmd.get_subcommands().find_map(|s| env_of(s, long)))
    }
    missing.iter().all(|m| {
        let long = m
            .trim_start_matches('-')
            .split([' ', '='])
            .next()
            .unwrap_or("");
        env_of(cmd, long).is_some_and(|env| exported.contains(&env))
    })
}

/// The fleetgate program a command runs and its arguments: `fleetgate …`,
/// `./target/release/fleetgate-bench …`, `cargo run [-p X|--bin X] -- …`.
fn program_and_args(words: &[String]) -> Option<(String, Vec<String>)> {
    let (first, rest) = words.split_first()?;
    let name = first.rsplit('/').next().unwrap_or(first);
    if name.starts_with("fleetgate") {
        return Some((name.to_string(), rest.to_vec()));
    }
    if name == "cargo" && rest.first().is_some_and(|w| w == "run") {
        let program = rest
            .windows(2)
            .find(|w| w[0] == "-p" || w[0] == "--bin")
            .map(|w| w[1].clone())?;
        let args = match rest.iter().position(|w| w == "--") {
            Some(i) => rest[i + 1..].to_vec(),
            None => Vec::new(),
        };
        return Some((program, args));
    }
    None
}

#[test]
fn flags_named_in_prose_exist() {
    let root = root();
    let docs = markdown::load(&root);
    let flags = code::all_flags(&code::programs(&root));
    // Flags of other programs that the docs name on their own.
    let foreign = [
        "--locked",        // cargo
        "--for",           // kubectl wait / events
        "--field-manager", // kubectl annotate
        "--timeout",       // kubectl wait (also the CLI's)
        "--overwrite",     // kubectl annotate
        "--ignored",       // cargo test -- --ignored
        "--nocapture",
    ];
    let mut problems = Vec::new();
    for doc in docs
        .iter()
        .filter(|d| !d.path.ends_with("performance-history.md"))
    {
        // A span that is a flag (`--held-kinds`, `--local-gates enforce`);
        // spans that are command lines are checked with their program. A
        // section on what is "not yet" built may name a flag to come.
        let planned = |s: &markdown::Located| s.section.to_lowercase().contains("not yet");
        for s in doc
            .spans
            .iter()
            .filter(|s| s.text.starts_with("--") && !planned(s))
        {
            for word in s.text.split([' ', '/', ',']) {
                let flag = word.split(['=', '[']).next().unwrap_or("");
                if !flag.starts_with("--") || flag.len() < 4 || flag.contains('*') {
                    continue;
                }
                if !flags.contains(flag) && !foreign.contains(&flag) {
                    problems.push(format!(
                        "{}: `{}`: no program has {flag}",
                        doc.at(s.line),
                        s.text
                    ));
                }
            }
        }
    }
    fail_on(problems, "flags that no fleetgate program has");
}

#[test]
fn kubectl_lines_name_real_resources_columns_and_files() {
    let root = root();
    let docs = markdown::load(&root);
    let resources = code::resources(&root);
    let corpus = code::corpus(&root);
    let mut problems = Vec::new();
    let mut checked = 0;
    for shown in shown_commands(&docs) {
        let words = &shown.command.words;
        if words.first().is_none_or(|w| w != "kubectl") {
            continue;
        }
        let mut positional = Vec::new();
        let mut it = words[1..].iter().peekable();
        while let Some(w) = it.next() {
            if let Some(flag) = w.strip_prefix('-') {
                let (name, value) = match flag.split_once('=') {
                    Some((n, v)) => (n.trim_start_matches('-'), Some(v.to_string())),
                    None => (flag.trim_start_matches('-'), None),
                };
                let takes_value = matches!(
                    name,
                    "n" | "namespace"
                        | "kubeconfig"
                        | "o"
                        | "output"
                        | "l"
                        | "selector"
                        | "f"
                        | "filename"
                        | "k"
                        | "kustomize"
                        | "for"
                        | "timeout"
                        | "token"
                        | "from-literal"
                        | "field-manager"
                        | "dry-run"
                        | "context"
                );
                let value = match value {
                    Some(v) => Some(v),
                    None if takes_value => it.next().cloned(),
                    None => None,
                };
                if let Some(v) = value {
                    match name {
                        "f" | "filename" | "k" | "kustomize" => {
                            // A path in this repository (`deploy/…`, `examples/…`); the
                            // reader's own files (`clusters/…`) are theirs.
                            let ours = Path::new(&v)
                                .components()
                                .next()
                                .is_some_and(|c| root.join(c).is_dir());
                            if ours && !placeholder(&v) && !root.join(&v).exists() {
                                problems.push(format!(
                                    "{}: kubectl -{name} {v}: no such path",
                                    shown.at
                                ));
                            }
                        }
                        "for" if !v.starts_with("condition=") => positional.push(v),
                        _ => {}
                    }
                }
            } else {
                positional.push(w.clone());
            }
        }
        let verb = positional.first().cloned().unwrap_or_default();
        let kinds: Vec<String> = match verb.as_str() {
            "get" | "describe" | "delete" | "edit" | "label" | "annotate" | "explain" | "patch"
            | "wait" | "logs" => positional.get(1).into_iter().cloned().collect(),
            "events" => positional.get(1).into_iter().cloned().collect(),
            "rollout" => positional.get(2).into_iter().cloned().collect(),
            _ => Vec::new(),
        };
        // A ConfigMap by name (`kubectl get configmap fleetgate-spoke-snapshot`)
        // must be one the code or the manifests use.
        if let (Some(kind), Some(name)) = (positional.get(1), positional.get(2))
            && ["configmap", "configmaps", "cm"].contains(&kind.as_str())
            && !placeholder(name)
            && !corpus.contains(&format!("\"{name}\""))
            && !corpus.contains(&format!(": {name}\n"))
        {
            problems.push(format!(
                "{}: kubectl {verb} {kind} {name}: no such ConfigMap in code or deploy/",
                shown.at
            ));
        }
        for arg in kinds {
            let kind_part = arg.split('/').next().unwrap_or("");
            let kind_part = kind_part
                .split('.')
                .next()
                .filter(|_| verb == "explain")
                .unwrap_or(kind_part);
            for kind in kind_part.split(',') {
                if kind.is_empty() || placeholder(kind) || (arg.contains('/') && kind.is_empty()) {
                    continue;
                }
                checked += 1;
                match resources.get(kind) {
                    None => problems.push(format!(
                        "{}: kubectl {verb} {arg}: no resource '{kind}'",
                        shown.at
                    )),
                    Some(r) if verb == "get" && !r.columns.is_empty() => {
                        if let Some(comment) = &shown.command.comment
                            && comment.starts_with("NAME ")
                        {
                            let wide = words.iter().any(|w| w == "wide");
                            let mut want = vec!["NAME".to_string()];
                            let all_ns = words.iter().any(|w| w == "-A" || w == "--all-namespaces");
                            if r.namespaced && all_ns {
                                want.insert(0, "NAMESPACE".into());
                            }
                            want.extend(
                                r.columns
                                    .iter()
                                    .filter(|(_, p)| wide || *p == 0)
                                    .map(|(n, _)| n.clone()),
                            );
                            let shown_cols: Vec<String> = comment
                                .split_whitespace()
                                .take_while(|w| w.chars().all(|c| c.is_ascii_uppercase()))
                                .map(str::to_string)
                                .collect();
                            if shown_cols != want {
                                problems.push(format!(
                                    "{}: kubectl get {arg} shows {shown_cols:?}, the CRD prints {want:?}",
                                    shown.at
                                ));
                            }
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }
    assert!(
        checked > 10,
        "only {checked} kubectl resources found: is the reader broken?"
    );
    fail_on(problems, "kubectl lines that name what does not exist");
}

#[test]
fn metrics_configmaps_and_variables_named_exist() {
    let root = root();
    let docs = markdown::load(&root);
    let metrics = code::metrics(&root);
    assert!(metrics.len() > 30, "metrics found in the code: {metrics:?}");
    let corpus = code::corpus(&root);
    let word = regex::Regex::new(r"\bfleetgate_(?:hub|spoke)_[a-z0-9_]+").expect("regex");
    let configmap =
        regex::Regex::new(r"(?i)(?:configmaps?[\s(]+`([a-z0-9.-]+)`|`([a-z0-9.-]+)`\s+configmap)")
            .expect("regex");
    let variable = regex::Regex::new(r"\bFLEETGATE_[A-Z0-9_]*[A-Z0-9]\b").expect("regex");
    let mut problems = Vec::new();
    for doc in &docs {
        // Across line breaks: "the snapshot ConfigMap\n(`name`)".
        for c in configmap.captures_iter(&doc.text) {
            let m = c.iter().skip(1).flatten().next().expect("a name group");
            let name = m.as_str();
            let line = doc.text[..m.start()].matches('\n').count() + 1;
            if !placeholder(name)
                && !corpus.contains(&format!("\"{name}\""))
                && !corpus.contains(&format!(": {name}\n"))
            {
                problems.push(format!(
                    "{}: ConfigMap {name} exists neither in code nor in deploy/",
                    doc.at(line)
                ));
            }
        }
        for (i, line) in doc.text.lines().enumerate() {
            for m in word.find_iter(line) {
                let name = m.as_str().trim_end_matches('_');
                if !code::is_metric(&metrics, name) {
                    problems.push(format!(
                        "{}: metric {name} is not registered",
                        doc.at(i + 1)
                    ));
                }
            }
            for v in variable.find_iter(line) {
                if !corpus.contains(v.as_str()) {
                    problems.push(format!(
                        "{}: {} is read by no program and set by no manifest",
                        doc.at(i + 1),
                        v.as_str()
                    ));
                }
            }
        }
    }
    fail_on(problems, "names that do not exist");
}

#[test]
fn alert_rules_parse_and_name_real_metrics() {
    let root = root();
    let metrics = code::metrics(&root);
    let text = std::fs::read_to_string(root.join("deploy/monitoring/prometheusrule.yaml"))
        .expect("the rules");
    let rules: serde_json::Value = fleetgate_policy::yaml::from_str_documents(&text)
        .expect("valid YAML")
        .into_iter()
        .next()
        .expect("one document");
    assert_eq!(rules["kind"], "PrometheusRule");
    let word = regex::Regex::new(r"\bfleetgate_[a-z0-9_]+").expect("regex");
    let mut alerts = BTreeSet::new();
    let mut problems = Vec::new();
    for group in rules["spec"]["groups"].as_array().expect("groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let name = rule["alert"].as_str().expect("an alert name");
            assert!(alerts.insert(name.to_string()), "alert {name} twice");
            let expr = rule["expr"].as_str().expect("an expression");
            let named: Vec<&str> = word.find_iter(expr).map(|m| m.as_str()).collect();
            assert!(!named.is_empty(), "{name}: no fleetgate metric in {expr}");
            for m in named {
                if !code::is_metric(&metrics, m) {
                    problems.push(format!("{name}: {m} is not registered"));
                }
            }
            assert_eq!(
                expr.matches('(').count(),
                expr.matches(')').count(),
                "{name}: unbalanced parentheses in {expr}"
            );
            assert!(
                rule["labels"]["severity"].is_string(),
                "{name}: no severity"
            );
            assert!(
                rule["annotations"]["summary"].is_string(),
                "{name}: no summary"
            );
        }
    }
    // The on-call page explains every alert the manifest ships.
    let page = std::fs::read_to_string(root.join("docs/metrics-and-alerts.md")).expect("the page");
    for a in &alerts {
        if !page.contains(&format!("`{a}`")) {
            problems.push(format!("docs/metrics-and-alerts.md does not explain {a}"));
        }
    }
    fail_on(problems, "alert rule problems");
}
