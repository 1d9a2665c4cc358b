//! `fleetgate login` while the hub's identity provider is down (nothing listens at its
//! issuer) and the hub is up: the CLI names the identity provider and the URL it tried and
//! exits with the provider's own code (9), not "the hub cannot be reached" (7).

mod common;

use common::start_hub_with;

#[test]
fn login_with_the_provider_down_names_the_provider_and_exits_9() {
    let dir = tempfile::tempdir().unwrap();
    let dead = format!("http://127.0.0.1:{}", fleetgate_tests::free_port());
    let secret = dir.path().join("client-secret");
    std::fs::write(&secret, "dashboard-secret\n").unwrap();
    let config = dir.path().join("identity.yaml");
    std::fs::write(
        &config,
        format!(
            "login:
  displayName: Test IdP
  issuer: {dead}
  clientId: fleetgate-dashboard
  clientSecretFile: {secret}
  redirectUri: http://127.0.0.1:1/auth/callback
  cliClientId: fleetgate-cli
roles:
  - {{group: sre, role: operator}}
",
            secret = secret.display()
        ),
    )
    .unwrap();
    let hub = start_hub_with(&[
        ("FLEETGATE_IDENTITY_CONFIG", config.to_str().unwrap()),
        ("FLEETGATE_EGRESS_ALLOW_PRIVATE", "true"),
        ("FLEETGATE_EGRESS_ALLOW_HTTP", "true"),
    ]);
    let out = hub.cli_as("", &["login"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(9), "{stderr}");
    let want = format!(
        "cannot reach the identity provider Test IdP at {dead}/.well-known/openid-configuration"
    );
    assert!(stderr.contains(&want), "{stderr}");
    assert!(!stderr.contains("cannot reach the hub"), "{stderr}");
}
