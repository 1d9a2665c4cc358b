//! Steps the end-to-end and simulator tests take against a cluster: a dynamic
//! API for a Flux or app kind, a bounded watch until an object is as wanted,
//! the real kubectl as a person types it, and the seeds' nginx app.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::DynamicObject;
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::watcher;
use kube::{Api, Client};

/// A group, version and kind, e.g. `("apps", "v1", "Deployment")`.
pub type Gvk<'a> = (&'a str, &'a str, &'a str);

/// Flux's Kustomization.
pub const KUSTOMIZATION: Gvk<'static> = ("kustomize.toolkit.fluxcd.io", "v1", "Kustomization");

/// The objects of `gvk` in namespace `ns`.
pub fn dynamic_api(client: &Client, gvk: Gvk<'_>, ns: &str) -> Api<DynamicObject> {
    let (group, version, kind) = gvk;
    let resource = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(client.clone(), ns, &resource)
}

/// Watches `name` through `api` until `pred` holds for it; panics naming
/// `what` when the watch ends or `bound` passes first.
pub async fn watch_until(
    api: Api<DynamicObject>,
    name: &str,
    what: &str,
    bound: Duration,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    let fut = async {
        let mut s = std::pin::pin!(watcher::watch_object(api, name).boxed());
        while let Some(ev) = s.next().await {
            if let Ok(Some(o)) = ev
                && pred(&o)
            {
                return o;
            }
        }
        panic!("watch ended: {name} {what}");
    };
    tokio::time::timeout(bound, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {bound:?}: {name} {what}"))
}

/// The real kubectl against `kubeconfig`: its standard output (it must succeed).
pub fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The seeds' nginx app, as one Kustomization applies it: its namespace
/// `nginx` and [`nginx_objects`].
pub fn nginx_app(image: &str, color: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: nginx}}\n---\n{}",
        nginx_objects(image, color)
    )
}

/// The nginx app's objects in namespace nginx: a ConfigMap (its `color`), a
/// Deployment (its `image`) and a Service.
pub fn nginx_objects(image: &str, color: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: ConfigMap
metadata: {{name: nginx-config, namespace: nginx}}
data: {{color: {color}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: nginx, namespace: nginx}}
spec:
  replicas: 1
  template: {{spec: {{containers: [{{name: nginx, image: "{image}"}}]}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: nginx, namespace: nginx}}
spec: {{ports: [{{port: 80}}]}}
"#
    )
}
