//! Every `fleetgate …` command line the docs show parses with its program's own clap
//! definition (or names only flags the program has), with required arguments that an
//! exported variable provides; every `--flag` the prose names belongs to a program.

use crate::code::{self, Program};
use crate::{concrete, fail_on, markdown, placeholder, root, shown_commands};

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
        // History pages keep each round as it was written.
        .filter(|d| !d.path.ends_with("early-performance-history.md"))
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
