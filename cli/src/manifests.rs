//! Loading gate manifests from files and directories (`-f FILE|DIR`):
//! YAML (several documents separated by `---`) or JSON, parsed and validated
//! with the policy crate so errors name the file and the field path.

use std::path::{Path, PathBuf};

use fleetgate_policy::Gate;

use crate::error::{Error, Result};

/// One parsed, validated gate and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// `file` or `file#2` (the second YAML document) for messages.
    pub source: String,
    pub gate: Gate,
}

/// Expands directories (their `*.yaml`, `*.yml`, `*.json` files, sorted, not
/// recursive — like `kubectl -f DIR`) and loads every gate. Fails on the
/// first invalid manifest, and on two manifests for the same gate name.
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Loaded>> {
    let mut out: Vec<Loaded> = Vec::new();
    for file in expand(paths)? {
        out.extend(load_file(&file)?);
    }
    check_unique(&out)?;
    if out.is_empty() {
        return Err(Error::Usage("no gate manifests found".into()));
    }
    Ok(out)
}

/// Two manifests for one gate name would make `apply` flip-flop.
pub fn check_unique(loaded: &[Loaded]) -> Result<()> {
    for (i, l) in loaded.iter().enumerate() {
        if let Some(prev) = loaded[..i].iter().find(|p| p.gate.name() == l.gate.name()) {
            return Err(Error::invalid(
                &l.source,
                format!(
                    "metadata.name: gate '{}' is also defined in {}",
                    l.gate.name(),
                    prev.source
                ),
            ));
        }
    }
    Ok(())
}

pub fn expand(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p.display(), e))?;
        if meta.is_dir() {
            let mut in_dir: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| Error::io(p.display(), e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.is_file() && is_manifest(f))
                .collect();
            in_dir.sort();
            files.extend(in_dir);
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

fn is_manifest(p: &Path) -> bool {
    matches!(
        p.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml" | "json")
    )
}

/// Loads every gate in one file (each YAML document is one gate).
pub fn load_file(path: &Path) -> Result<Vec<Loaded>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path.display(), e))?;
    let docs = split_documents(&text);
    let name = path.display().to_string();
    let many = docs.len() > 1;
    let mut out = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let source = if many {
            format!("{name}#{}", i + 1)
        } else {
            name.clone()
        };
        let gate = parse_valid(&source, doc)?;
        out.push(Loaded { source, gate });
    }
    if out.is_empty() {
        return Err(Error::invalid(name, "no gate manifest in this file"));
    }
    Ok(out)
}

/// Parses, validates and compiles one manifest text; the error carries the
/// policy crate's field path (`spec.windows[0].schedule: ...`).
pub fn parse_valid(source: &str, text: &str) -> Result<Gate> {
    let gate = fleetgate_policy::parse_gate(text).map_err(|e| Error::invalid(source, e))?;
    gate.validate().map_err(|e| Error::invalid(source, e))?;
    gate.compile().map_err(|e| Error::invalid(source, e))?;
    Ok(gate)
}

/// Splits YAML text on `---` document separators, dropping empty documents
/// (comments only, or a leading separator).
pub(crate) fn split_documents(text: &str) -> Vec<&str> {
    let mut docs = Vec::new();
    let mut start = 0;
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed == "---" || trimmed.starts_with("--- ") {
            docs.push(&text[start..offset]);
            start = offset + line.len();
        }
        offset += line.len();
    }
    docs.push(&text[start..]);
    docs.into_iter().filter(|d| has_content(d)).collect()
}

fn has_content(doc: &str) -> bool {
    doc.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#') && t != "..."
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_documents_and_drops_empty_ones() {
        let text = "---\n# only a comment\n---\na: 1\n---\nb: 2\n";
        assert_eq!(split_documents(text), vec!["a: 1\n", "b: 2\n"]);
        assert_eq!(split_documents("{\"a\": 1}"), vec!["{\"a\": 1}"]);
        assert!(split_documents("\n# nothing\n").is_empty());
    }
}
