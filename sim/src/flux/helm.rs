//! What helm-controller and source-controller do for charts: a HelmRelease with
//! `spec.chart` gets a generated HelmChart `<namespace>-<name>` in its source's namespace
//! (`status.helmChart`), and a HelmChart publishes a chart version that moves on when its
//! source (a HelmRepository index, Git or Bucket artifact) publishes a new revision, or
//! when a version is pushed to the HelmChart directly.

use serde_json::{Value, json};

use crate::cluster::{Cluster, SourceKey};
use crate::ops::{self, Track, WriteOpts};

/// The HelmChart helm-controller generates for a HelmRelease with `spec.chart`.
pub fn generated_chart_key(hr: &Value) -> Option<SourceKey> {
    let m = &hr["metadata"];
    let (ns, name) = (m["namespace"].as_str()?, m["name"].as_str()?);
    let src = &hr["spec"]["chart"]["spec"]["sourceRef"];
    let src_ns = src["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or(ns);
    Some(("HelmChart".into(), src_ns.into(), format!("{ns}-{name}")))
}

fn chart_spec(hr: &Value) -> Value {
    let c = &hr["spec"]["chart"]["spec"];
    let mut source = c["sourceRef"].clone();
    if let Some(m) = source.as_object_mut() {
        m.remove("namespace");
    }
    json!({
        "chart": c["chart"],
        "version": c["version"].as_str().unwrap_or("*"),
        "sourceRef": source,
        "interval": c["interval"].as_str().or(hr["spec"]["interval"].as_str()).unwrap_or("10m"),
        "reconcileStrategy": c["reconcileStrategy"].as_str().unwrap_or("ChartVersion"),
    })
}

/// Creates or updates the generated HelmChart (keeping fields such as `suspend` that are
/// not part of the HelmRelease's chart template).
pub fn ensure_chart(cluster: &Cluster, hr: &Value) {
    let Some((_, ns, name)) = generated_chart_key(hr) else {
        return;
    };
    let Some(rt) = cluster
        .registry()
        .by_kind("source.toolkit.fluxcd.io/v1", "HelmChart")
    else {
        return;
    };
    let want = chart_spec(hr);
    let opts = WriteOpts {
        manager: "helm-controller".into(),
        ..WriteOpts::default()
    };
    let current = cluster.store.with(|s| s.get(&rt.key(), &ns, &name));
    let result = match current {
        None => {
            let obj = json!({"apiVersion": rt.api_version(), "kind": "HelmChart",
                "metadata": {"name": name, "namespace": ns}, "spec": want});
            ops::create(cluster, &rt, Some(&ns), obj, &opts, Track::Update).map(|_| ())
        }
        Some(cur) => {
            let mut obj = (*cur).clone();
            for (k, v) in want.as_object().into_iter().flatten() {
                obj["spec"][k.as_str()] = v.clone();
            }
            if obj == *cur {
                return;
            }
            ops::update(
                cluster,
                &rt,
                &ns,
                &name,
                obj,
                ops::Sub::Main,
                &opts,
                Track::Update,
                Some(&cur),
            )
            .map(|_| ())
        }
    };
    if let Err(e) = result {
        tracing::debug!(cluster = %cluster.name, %ns, %name, error = %e, "generating HelmChart failed");
    }
}

/// Deletes generated HelmCharts whose HelmRelease is gone or no longer uses `spec.chart`
/// (helm-controller removes them through its finalizer). Generated charts are those
/// helm-controller created: it is a manager of their main resource.
pub fn collect_orphan_charts(cluster: &Cluster) {
    let (Some(charts), Some(releases)) = (
        cluster
            .registry()
            .by_kind("source.toolkit.fluxcd.io/v1", "HelmChart"),
        cluster
            .registry()
            .by_kind("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
    ) else {
        return;
    };
    let (all_charts, all_releases) = cluster.store.with(|s| {
        (
            s.list(&charts.key(), None, None),
            s.list(&releases.key(), None, None),
        )
    });
    let wanted: Vec<SourceKey> = all_releases
        .iter()
        .filter(|hr| !hr["spec"]["chartRef"].is_object())
        .filter_map(|hr| generated_chart_key(hr))
        .collect();
    for chart in all_charts {
        let m = &chart["metadata"];
        let (ns, name) = (
            m["namespace"].as_str().unwrap_or_default(),
            m["name"].as_str().unwrap_or_default(),
        );
        let key = ("HelmChart".to_string(), ns.to_string(), name.to_string());
        if wanted.contains(&key) {
            continue; // the common case, decided before parsing managedFields
        }
        let generated = crate::managed::read(&chart)
            .iter()
            .any(|e| e.manager == "helm-controller" && e.subresource.is_empty());
        if generated && let Err(e) = ops::delete(cluster, &charts, ns, name, None, false) {
            tracing::debug!(cluster = %cluster.name, %ns, %name, error = %e, "deleting orphan HelmChart failed");
        }
    }
}

/// Next patch version (`6.5.4` → `6.5.5`; anything else → `1.0.0`).
fn bump(version: &str) -> String {
    let core = version.split(['+', '-']).next().unwrap_or_default();
    let parts: Vec<u64> = core.split('.').filter_map(|p| p.parse().ok()).collect();
    match parts.as_slice() {
        [a, b, c] => format!("{a}.{b}.{}", c + 1),
        _ => "1.0.0".into(),
    }
}

/// The chart version a HelmChart should publish, and the source revision it is built from.
pub fn chart_revision(
    cluster: &Cluster,
    chart: &Value,
    source_revision: Option<&str>,
) -> Option<(String, Option<String>)> {
    let m = &chart["metadata"];
    let key = (
        "HelmChart".to_string(),
        m["namespace"].as_str().unwrap_or_default().to_string(),
        m["name"].as_str().unwrap_or_default().to_string(),
    );
    if let Some(pushed) = cluster.upstream_revision(&key) {
        return Some((pushed, source_revision.map(String::from)));
    }
    let source_revision = source_revision?;
    let status = &chart["status"];
    let current = status["artifact"]["revision"].as_str();
    let version = match current {
        Some(v) if status["observedSourceArtifactRevision"] == source_revision => v.to_string(),
        Some(v) => bump(v),
        None => chart["spec"]["version"]
            .as_str()
            .filter(|v| v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u64>().is_ok()))
            .unwrap_or("1.0.0")
            .to_string(),
    };
    Some((version, Some(source_revision.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_and_names() {
        assert_eq!(bump("6.5.4"), "6.5.5");
        assert_eq!(bump("1.2.3+abc"), "1.2.4");
        assert_eq!(bump("latest"), "1.0.0");
        let hr = json!({"metadata": {"name": "web", "namespace": "apps"},
            "spec": {"interval": "5m", "chart": {"spec": {"chart": "podinfo",
                "sourceRef": {"kind": "HelmRepository", "name": "podinfo", "namespace": "flux-system"}}}}});
        assert_eq!(
            generated_chart_key(&hr),
            Some(("HelmChart".into(), "flux-system".into(), "apps-web".into()))
        );
        assert_eq!(
            chart_spec(&hr)["sourceRef"],
            json!({"kind": "HelmRepository", "name": "podinfo"})
        );
        assert_eq!(chart_spec(&hr)["interval"], "5m");
    }
}
