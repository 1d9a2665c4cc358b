//! kube-rs clients for test clusters: every test that talks to a simulated
//! cluster (in-process `Sim`, the `fleetgate-sim` process) builds its client
//! from a kubeconfig document here.

use std::path::Path;

/// A client for the current context of `kubeconfig_yaml`.
pub async fn kube_client(kubeconfig_yaml: &str) -> kube::Client {
    let kc = kube::config::Kubeconfig::from_yaml(kubeconfig_yaml).expect("kubeconfig parses");
    client_of(kc).await
}

/// A client for the current context of the kubeconfig file at `path`.
pub async fn kube_client_from_file(path: &Path) -> kube::Client {
    let kc = kube::config::Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("kubeconfig {}: {e}", path.display()));
    client_of(kc).await
}

async fn client_of(kc: kube::config::Kubeconfig) -> kube::Client {
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kube config");
    kube::Client::try_from(config).expect("kube client")
}
