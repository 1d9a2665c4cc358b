//! The demo as the tests run it: `fleetgate-demo` on free ports, its printed
//! lines up to "demo ready" (bounded), and the hub it started, asked over REST
//! and through the CLI.
#![allow(dead_code)] // each test binary uses a different part

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use fleetgate_tests::{ChildGuard, bin_path, free_port};
use serde_json::Value;

/// How long the demo may take to print "demo ready" (PostgreSQL, the hub, the
/// clusters and their spokes on a loaded machine).
const READY: Duration = Duration::from_secs(180);

/// The nginx Deployment's entry in a cluster status's held objects (the demo's
/// object-level hold on staging-eu-1).
pub fn held_nginx(status: &Value) -> &Value {
    status["heldObjects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["name"] == "nginx")
        .unwrap_or_else(|| panic!("nginx Deployment reported: {status}"))
}

/// A running demo.
pub struct Demo {
    guard: ChildGuard,
    /// What it printed, up to and with the "demo ready:" line.
    pub lines: Vec<String>,
    /// The hub's base URL and the admin token, from the ready line.
    pub hub: String,
    pub token: String,
    rt: tokio::runtime::Runtime,
    /// The demo's output after the ready line; kept so the reader goes on
    /// draining it until the demo exits.
    rest: mpsc::Receiver<String>,
}

impl Demo {
    /// Starts `fleetgate-demo` with `args` (its own PostgreSQL: no
    /// `DATABASE_URL`) and waits for its ready line. The CLI is built first
    /// where it is stale, so no build runs beside the demo.
    pub fn start(args: &[&str]) -> Demo {
        bin_path("fleetgate");
        let (http, grpc) = (free_port(), free_port());
        let mut child = Command::new(env!("CARGO_BIN_EXE_fleetgate-demo"))
            .args(args)
            .args(["--http-addr", &format!("127.0.0.1:{http}")])
            .args(["--grpc-addr", &format!("127.0.0.1:{grpc}")])
            .env_remove("DATABASE_URL")
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting fleetgate-demo");
        let stdout = child.stdout.take().unwrap();
        let guard = ChildGuard(child);
        let (tx, rx) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + READY;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("demo {args:?}: output ended or timed out: {e}"));
            let ready = line.starts_with("demo ready:");
            lines.push(line);
            if ready {
                break;
            }
        }
        let mut demo = Demo {
            guard,
            lines,
            hub: String::new(),
            token: String::new(),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap(),
            rest: rx,
        };
        demo.hub = demo.field("hub");
        demo.token = demo.field("token");
        demo
    }

    /// The "demo ready:" line.
    pub fn ready(&self) -> &str {
        self.lines.last().unwrap()
    }

    /// The value of `k=` on the ready line.
    pub fn field(&self, k: &str) -> String {
        let ready = self.ready();
        ready
            .split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k} in {ready}"))
            .to_string()
    }

    /// The printed line starting with `prefix` (without it).
    pub fn line(&self, prefix: &str) -> &str {
        self.lines
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in {:#?}", self.lines))
    }

    /// Waits (at most `limit`) for a line the demo prints after it is ready
    /// that contains `needle`; returns it, or None.
    pub fn wait_line(&self, needle: &str, limit: Duration) -> Option<String> {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rest.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Some(line),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// The hub's JSON answer to `GET /api/v1{path}` (which must succeed).
    pub fn get(&self, path: &str) -> Value {
        self.rt.block_on(async {
            let resp = reqwest::Client::new()
                .get(format!("{}/api/v1{path}", self.hub))
                .bearer_auth(&self.token)
                .timeout(Duration::from_secs(10))
                .send()
                .await
                .expect("hub answers");
            assert!(resp.status().is_success(), "{path}: {}", resp.status());
            resp.json().await.unwrap()
        })
    }

    /// The status of `GET {hub}{path}`, or None where nothing answers.
    pub fn answers(&self, path: &str) -> Option<u16> {
        self.rt.block_on(async {
            reqwest::Client::new()
                .get(format!("{}{path}", self.hub))
                .timeout(Duration::from_secs(10))
                .send()
                .await
                .ok()
                .map(|r| r.status().as_u16())
        })
    }

    /// `fleetgate ARGS -o json` against the demo's hub: its JSON output (the
    /// command must succeed).
    pub fn fleetgate(&self, args: &[&str]) -> Value {
        let out = Command::new(bin_path("fleetgate"))
            .args(args)
            .args(["-o", "json", "--hub", &self.hub, "--token", &self.token])
            .output()
            .expect("running fleetgate");
        assert_eq!(
            out.status.code(),
            Some(0),
            "fleetgate {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON output")
    }

    /// SIGTERM: the demo stops within 60 s with exit code 0.
    pub fn stop(&mut self) {
        self.guard.terminate();
        let deadline = Instant::now() + Duration::from_secs(60);
        let code = loop {
            if let Some(st) = self.guard.0.try_wait().unwrap() {
                break st.code();
            }
            assert!(
                Instant::now() < deadline,
                "demo did not stop within 60 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(code, Some(0));
    }
}
