//! Every relative link and `#anchor` in the docs resolves: the file exists, and the
//! anchor is a heading of a checked doc by GitHub's slug rules.

use std::path::{Path, PathBuf};

use crate::{fail_on, markdown, root};

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
