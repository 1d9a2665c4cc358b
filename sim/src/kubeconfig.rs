//! kubeconfig documents pointing kubectl and kube-rs at a simulated cluster.

use serde_json::json;

/// A kubeconfig with one cluster/user/context named after `cluster`.
pub fn render(cluster: &str, server: &str, token: Option<&str>) -> String {
    let mut user = json!({});
    if let Some(t) = token {
        user["token"] = json!(t);
    }
    let doc = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": {"server": server}}],
        "users": [{"name": cluster, "user": user}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": cluster, "namespace": "default"}}],
        "current-context": cluster,
        "preferences": {},
    });
    // serde_yaml renders any serde_json::Value; failure is impossible for this shape.
    serde_yaml::to_string(&doc).unwrap_or_default()
}
