//! The example files the demo loads (every `examples/*.yaml` gate and every
//! `examples/access/*.yaml` policy) are the ones the guides cite: each is
//! linked by its path from some `docs/*.md`, so a reader who meets a gate or
//! a policy in the demo finds its file explained.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn yaml_in(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "yaml"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_example_the_demo_loads_is_cited_in_the_docs() {
    let root = root();
    let docs: String = std::fs::read_dir(root.join("docs"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let loaded: Vec<PathBuf> = yaml_in(&root.join("examples"))
        .into_iter()
        .chain(yaml_in(&root.join("examples/access")))
        .collect();
    assert!(loaded.len() > 10, "{loaded:?}");
    let uncited: Vec<String> = loaded
        .iter()
        .map(|p| {
            p.strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|rel| !docs.contains(&format!("(../{rel})")))
        .collect();
    assert!(
        uncited.is_empty(),
        "examples the demo loads that no guide links: {uncited:?}"
    );
}
