//! kubeconfig documents pointing kubectl and kube-rs at a simulated cluster.

use serde_json::json;

/// A kubeconfig with one cluster/user/context named after `cluster` (trusting `ca_pem`
/// for an https server).
pub fn render(cluster: &str, server: &str, token: Option<&str>, ca_pem: Option<&str>) -> String {
    use base64::Engine;
    let mut user = json!({});
    if let Some(t) = token {
        user["token"] = json!(t);
    }
    let mut cluster_entry = json!({"server": server});
    if let Some(ca) = ca_pem {
        cluster_entry["certificate-authority-data"] =
            json!(base64::engine::general_purpose::STANDARD.encode(ca));
    }
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": cluster_entry}],
        "users": [{"name": cluster, "user": user}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster, "namespace": "default"}}],
        "current-context": cluster,
        "preferences": {},
    });
    // Any serde_json::Value renders; failure is impossible for this shape.
    fleetgate_policy::yaml::to_string(&doc).unwrap_or_default()
}
