//! A realistic Flux fleet per cluster: a GitRepository in `flux-system` with
//! Kustomizations on it, a HelmRepository with HelmReleases in `apps`, and an
//! OCIRepository for bigger fleets. Objects carry `tier`/`team` labels for selectors.

use serde_json::{Value, json};

/// The objects (namespaces first) for `n` Flux objects in one cluster.
pub fn fleet(n: usize) -> Vec<Value> {
    let mut out = vec![namespace("flux-system"), namespace("apps")];
    if n == 0 {
        return out;
    }
    out.push(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "flux-system", "namespace": "flux-system", "labels": {"tier": "infra"}},
        "spec": {"interval": "1m", "url": "https://github.com/example/fleet-infra", "ref": {"branch": "main"}},
    }));
    let helm = n >= 4;
    let oci = n >= 10;
    if helm {
        out.push(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
            "metadata": {"name": "podinfo", "namespace": "flux-system", "labels": {"tier": "infra"}},
            "spec": {"interval": "5m", "url": "https://stefanprodan.github.io/podinfo"},
        }));
    }
    if oci {
        out.push(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
            "metadata": {"name": "manifests", "namespace": "flux-system", "labels": {"tier": "infra"}},
            "spec": {"interval": "5m", "url": "oci://ghcr.io/example/manifests", "ref": {"tag": "latest"}},
        }));
    }
    let sources = 1 + usize::from(helm) + usize::from(oci);
    for i in 0..n.saturating_sub(sources) {
        let team = if i % 2 == 0 { "a" } else { "b" };
        let obj = if helm && i % 3 == 2 {
            json!({
                "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                "metadata": {"name": format!("podinfo-{i:03}"), "namespace": "apps",
                             "labels": {"tier": "apps", "team": team}},
                "spec": {"interval": "10m", "chart": {"spec": {"chart": "podinfo", "version": "6.x",
                    "sourceRef": {"kind": "HelmRepository", "name": "podinfo", "namespace": "flux-system"}}}},
            })
        } else {
            let source = if oci && i % 5 == 4 {
                json!({"kind": "OCIRepository", "name": "manifests"})
            } else {
                json!({"kind": "GitRepository", "name": "flux-system"})
            };
            let tier = if i < 2 { "infra" } else { "apps" };
            json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                "metadata": {"name": format!("{tier}-{i:03}"), "namespace": "flux-system",
                             "labels": {"tier": tier, "team": team}},
                "spec": {"interval": "10m", "path": format!("./{tier}/{i:03}"), "prune": true,
                         "sourceRef": source, "targetNamespace": "apps"},
            })
        };
        out.push(obj);
    }
    out
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fleet_sizes() {
        let count = |objs: &[Value], kind: &str| objs.iter().filter(|o| o["kind"] == kind).count();
        let f = fleet(20);
        assert_eq!(f.len() - 2, 20);
        assert_eq!(count(&f, "GitRepository"), 1);
        assert_eq!(count(&f, "HelmRelease"), 5);
        assert_eq!(count(&f, "Kustomization"), 12);
        assert_eq!(fleet(1).len(), 3);
    }
}
