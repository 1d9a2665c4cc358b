//! Every SQL statement of the hub lives in `fleetgate-hub-store`: the crates above it
//! (core, adapters, API, binary) call the store's functions and never run SQL of their own
//! (issue 53, item 15: the spoke outage scan took its advisory lock itself).

use std::path::{Path, PathBuf};

/// What running SQL looks like in Rust source.
const SQL_CALLS: &[&str] = &[
    "sqlx::query",
    "sqlx::raw_sql",
    "query_as(",
    "query_scalar(",
    "query_as_with(",
    "AssertSqlSafe",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn sql_lives_in_the_store() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in ["hub-core", "hub-adapters", "hub-api", "hub"] {
        let src = root.join(krate).join("src");
        if src.is_dir() {
            rust_files(&src, &mut files);
        }
    }
    assert!(
        files.len() > 50,
        "found only {} hub source files",
        files.len()
    );
    let mut found = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("readable source");
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or_default();
            if let Some(call) = SQL_CALLS.iter().find(|c| code.contains(*c)) {
                let shown = file
                    .strip_prefix(&root)
                    .unwrap_or(file)
                    .display()
                    .to_string();
                found.push(format!("{shown}:{}: {call}", n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "SQL outside fleetgate-hub-store (move it into a store function):\n{}",
        found.join("\n")
    );
}
