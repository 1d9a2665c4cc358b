//! Names the docs and the alert rules use exist: every metric is registered, every
//! ConfigMap and `FLEETGATE_*` variable is in the code or the manifests, and every
//! shipped alert rule parses, names real metrics and is explained on the on-call page.

use std::collections::BTreeSet;

use crate::{code, fail_on, markdown, placeholder, root};

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
