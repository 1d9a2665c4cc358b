//! Shared by the CLI's end-to-end tests: a real `fleetgate-hub` process on
//! a throwaway PostgreSQL database, and the CLI binary run against it.
#![allow(dead_code)] // each test file uses a different subset

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use fleetgate_tests::{ChildGuard, bin_path, free_port, test_db};
use serde_json::Value;

pub const ADMIN: &str = "fga_e2e-admin-token-0123456789";

pub struct Hub {
    pub url: String,
    pub grpc_url: String,
    _proc: ChildGuard,
    _home: tempfile::TempDir,
    pub home: std::path::PathBuf,
}

pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

pub fn start_hub() -> Hub {
    start_hub_with(&[])
}

/// A hub with `env` beside the defaults (e.g. `FLEETGATE_EGRESS_ALLOW_HTTP`).
pub fn start_hub_with(env: &[(&str, &str)]) -> Hub {
    let rt = runtime();
    let db = rt.block_on(test_db());
    let http = free_port();
    let grpc = free_port();
    let child = Command::new(bin_path("fleetgate-hub"))
        .arg("serve")
        .args(["--database-url", &db.url])
        .args(["--http-addr", &format!("127.0.0.1:{http}")])
        .args(["--grpc-addr", &format!("127.0.0.1:{grpc}")])
        .env("FLEETGATE_ADMIN_TOKEN", ADMIN)
        .env("RUST_LOG", "warn")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("starting fleetgate-hub");
    let guard = ChildGuard(child);
    let url = format!("http://127.0.0.1:{http}");
    // Ready = /readyz answers 200 (migrations applied, database reachable).
    let deadline = Instant::now() + Duration::from_secs(60);
    rt.block_on(async {
        let http = reqwest::Client::new();
        loop {
            if let Ok(r) = http.get(format!("{url}/readyz")).send().await
                && r.status().is_success()
            {
                break;
            }
            assert!(Instant::now() < deadline, "hub not ready within 60 s");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let home = tempfile::tempdir().unwrap();
    Hub {
        url,
        grpc_url: format!("http://127.0.0.1:{grpc}"),
        _proc: guard,
        home: home.path().to_path_buf(),
        _home: home,
    }
}

impl Hub {
    /// Runs the CLI against this hub with `token`.
    pub fn cli_as(&self, token: &str, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_fleetgate"))
            .args(args)
            .env("FLEETGATE_HUB", &self.url)
            .env("FLEETGATE_TOKEN", token)
            .env_remove("FLEETGATE_CONFIG")
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", &self.home)
            .output()
            .expect("running fleetgate")
    }

    pub fn cli(&self, args: &[&str]) -> Output {
        self.cli_as(ADMIN, args)
    }

    /// Runs the CLI, asserts exit 0, returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        let o = self.cli(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
        out(&o)
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        let text = self.ok(&a);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
    }
}

pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
        .display()
        .to_string()
}
