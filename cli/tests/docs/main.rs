//! The docs cannot drift from the code. Over README.md and every
//! `docs/*.md`: each relative link and `#anchor` resolves (GitHub's slug
//! rules); each `fleetgate …` command line parses with the CLI's own clap
//! definition, and the hub's and the spoke's with theirs; each `--flag` the
//! prose names belongs to a fleetgate program; each resource a `kubectl`
//! line names is a kind the CRDs in `deploy/` and `sim/crds/` or Kubernetes
//! define, with the columns `kubectl get` prints; each file a command reads
//! exists; each metric, ConfigMap and `FLEETGATE_*` variable named exists in
//! the code or the manifests. The shipped alert rules name real metrics too.
//! The README stays a short front door opening with the demo and the test
//! command, and every guide is in the docs index.
//!
//! The readers are `markdown`, `shell` and `code`; the checks are `links`,
//! `command_lines` (fleetgate command lines and flags), `kubectl`, `names`
//! (metrics, ConfigMaps, variables, alert rules) and `front_door`. The commands the docs show,
//! which several checks read, are gathered here.

mod code;
mod markdown;
mod shell;

mod command_lines;
mod front_door;
mod kubectl;
mod links;
mod names;

use std::path::{Path, PathBuf};

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
