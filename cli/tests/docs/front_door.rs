//! The README is a front door, not the house: at most 300 lines, with the two
//! commands a newcomer runs first (the demo, and the test command `.ci/run`
//! reads from under `<!-- test-command -->`) before anything else; and every
//! guide in `docs/` is reachable from the docs index.

use std::collections::BTreeSet;

use crate::{fail_on, markdown, root};

/// How many lines the README may have.
const README_LINES: usize = 300;
/// The two commands must come before the README's first section heading.
const FIRST_SECTION: &str = "\n## ";

#[test]
fn readme_is_short_and_opens_with_the_demo_and_the_test_command() {
    let text = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let mut problems = Vec::new();
    let lines = text.lines().count();
    if lines > README_LINES {
        problems.push(format!(
            "README.md has {lines} lines (at most {README_LINES}): move detail into docs/"
        ));
    }
    let top = text.split(FIRST_SECTION).next().unwrap_or_default();
    for (what, needle) in [
        (
            "the demo command",
            "cargo run --release --bin fleetgate-demo",
        ),
        ("the test-command marker", "<!-- test-command -->"),
        ("the test command", "cargo test --workspace --locked"),
    ] {
        if !top.contains(needle) {
            problems.push(format!(
                "README.md: {what} (`{needle}`) is not above the first section"
            ));
        }
    }
    // `.ci/run` runs the command in the code block right under the marker.
    let after_marker = text
        .split("<!-- test-command -->")
        .nth(1)
        .unwrap_or_default();
    if !after_marker
        .trim_start()
        .starts_with("```sh\ncargo test --workspace --locked")
    {
        problems
            .push("README.md: no `cargo test` code block right under <!-- test-command -->".into());
    }
    fail_on(problems, "problems with the README's front door");
}

#[test]
fn every_guide_is_linked_from_the_docs_index() {
    let root = root();
    let docs = markdown::load(&root);
    let index = docs
        .iter()
        .find(|d| d.path.ends_with("docs/README.md"))
        .expect("docs/README.md is a checked doc");
    let linked: BTreeSet<String> = index
        .links
        .iter()
        .map(|l| l.text.split('#').next().unwrap_or_default().to_string())
        .collect();
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(root.join("docs")).expect("docs/") {
        let name = entry.expect("docs entry").file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".md") && name != "README.md" && !linked.contains(name.as_ref()) {
            problems.push(format!("docs/{name} is not linked from docs/README.md"));
        }
    }
    fail_on(problems, "guides missing from the docs index");
}
