//! Every `kubectl` line the docs show names a resource the CRDs or Kubernetes define,
//! with the columns `kubectl get` prints, files (`-f`, `-k`) that exist in this
//! repository, and ConfigMaps the code or the manifests use.

use std::path::Path;

use crate::{code, fail_on, markdown, placeholder, root, shown_commands};

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
