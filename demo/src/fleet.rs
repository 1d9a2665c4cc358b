//! The demo fleet's shape: cluster names and labels (env/region/tier, and
//! `team: payments` on the payments team's two clusters), and the extra Flux
//! objects the example gates target (a payments app for the SRE approval
//! gate, a shop app for the freeze-sources release train).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// One simulated cluster of the demo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DemoCluster {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

const REGIONS: [&str; 3] = ["eu", "us", "ap"];

/// The payments team's clusters: those `examples/sre-approval.yaml` names,
/// labelled `team: payments` (the scope of `examples/access/team-payments.yaml`).
pub const PAYMENTS_CLUSTERS: [&str; 2] = ["prod-eu-1", "prod-us-1"];

/// `n` clusters: 40 % prod (`tier: core`, the clusters the ops calendar's
/// maintenance windows govern), 30 % staging, the rest dev, each spread over
/// the regions — `prod-eu-1`, `prod-us-1`, `prod-ap-1`, `prod-eu-2`, ...
pub fn clusters(n: usize) -> Vec<DemoCluster> {
    let prod = (n * 2).div_ceil(5).max(n.min(2));
    let staging = (n * 3 / 10).min(n - prod);
    let mut counts: BTreeMap<(String, String), usize> = BTreeMap::new();
    (0..n)
        .map(|i| {
            let (env, tier, j) = if i < prod {
                ("prod", "core", i)
            } else if i < prod + staging {
                ("staging", "standard", i - prod)
            } else {
                ("dev", "best-effort", i - prod - staging)
            };
            let region = REGIONS[j % REGIONS.len()];
            let k = counts.entry((env.into(), region.into())).or_default();
            *k += 1;
            let name = format!("{env}-{region}-{k}");
            let mut labels = BTreeMap::from([
                ("env".to_string(), env.to_string()),
                ("region".to_string(), region.to_string()),
                ("tier".to_string(), tier.to_string()),
            ]);
            if PAYMENTS_CLUSTERS.contains(&name.as_str()) {
                labels.insert("team".to_string(), "payments".to_string());
            }
            DemoCluster { name, labels }
        })
        .collect()
}

/// Objects beyond the simulator's standard seed, per cluster.
pub fn extra_objects(c: &DemoCluster) -> Vec<Value> {
    let mut out = vec![json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleetgate-system"}
    })];
    if c.labels.get("env").is_some_and(|e| e == "prod") {
        out.push(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "payments"}}),
        );
        out.push(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "payments-api", "namespace": "payments",
                         "labels": {"tier": "apps", "team": "payments"}},
            "spec": {"interval": "10m", "path": "./apps/payments", "prune": true,
                     "sourceRef": {"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"},
                     "targetNamespace": "payments"},
        }));
    }
    if c.labels.get("region").is_some_and(|r| r == "us") {
        out.push(json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "shop", "namespace": "flux-system", "labels": {"tier": "infra"}},
            "spec": {"interval": "1m", "url": "https://github.com/example/shop", "ref": {"branch": "main"}},
        }));
        out.push(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "shop-frontend", "namespace": "flux-system",
                         "labels": {"tier": "apps", "app.kubernetes.io/part-of": "shop"}},
            "spec": {"interval": "10m", "path": "./shop/frontend", "prune": true,
                     "sourceRef": {"kind": "GitRepository", "name": "shop"},
                     "targetNamespace": "apps"},
        }));
    }
    out
}

/// A revision in Flux's format for the `n`-th demo push to a cluster.
pub fn revision(cluster: &str, n: u32) -> String {
    // Deterministic, distinct per cluster and push: 40 hex digits.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in cluster.bytes().chain(n.to_le_bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let hex = format!("{h:016x}{:016x}{:08x}", h.rotate_left(17), n);
    format!("main@sha1:{hex}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn twenty_clusters_cover_envs_and_regions_with_unique_names() {
        let cs = clusters(20);
        assert_eq!(cs.len(), 20);
        let names: std::collections::BTreeSet<_> = cs.iter().map(|c| c.name.clone()).collect();
        assert_eq!(names.len(), 20);
        for must in ["prod-eu-1", "prod-us-1", "staging-eu-1", "dev-eu-1"] {
            assert!(names.contains(must), "{must} in {names:?}");
        }
        let prod = cs.iter().filter(|c| c.labels["env"] == "prod").count();
        assert_eq!(prod, 8);
        // The SRE approval example names prod-eu-1 and prod-us-1 even in tiny fleets.
        let two: Vec<_> = clusters(2).into_iter().map(|c| c.name).collect();
        assert_eq!(two, ["prod-eu-1", "prod-us-1"]);
        // The payments team's clusters, and the maintenance calendar's (tier core: prod).
        let team: Vec<_> = cs
            .iter()
            .filter(|c| c.labels.get("team").is_some_and(|t| t == "payments"))
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(team, PAYMENTS_CLUSTERS);
        let core = cs.iter().filter(|c| c.labels["tier"] == "core").count();
        assert_eq!(core, prod);
    }

    #[test]
    fn revisions_look_like_flux_and_differ() {
        let a = revision("prod-eu-1", 1);
        assert!(a.starts_with("main@sha1:"));
        assert_eq!(a.len(), "main@sha1:".len() + 40);
        assert_ne!(a, revision("prod-eu-1", 2));
        assert_ne!(a, revision("prod-eu-2", 1));
    }
}
