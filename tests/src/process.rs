//! Helpers to run the workspace's binaries as real processes in tests.

use std::collections::BTreeSet;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A free TCP port on 127.0.0.1 for a child process to listen on. It is picked below the
/// kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 by
/// default): a port from that range, bound and released here, can be handed to any outgoing
/// connection (a spoke's, PostgreSQL's) before the child binds it, and the child then fails
/// to start. Below it only listeners compete; each test process walks the ports from its own
/// start (by pid) and never hands out one port twice.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32768);
    let (low, high) = (10_000u32, ephemeral.clamp(10_001, 65_535));
    let span = high - low;
    let start = std::process::id().wrapping_mul(2_654_435_761) % span;
    for _ in 0..span {
        let port = low + (start + NEXT.fetch_add(1, Ordering::Relaxed)) % span;
        let port = u16::try_from(port).expect("a port");
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {low}..{high}")
}

/// Binaries this test process already built (or found fresh): cargo runs at
/// most once per binary even when a source file stays newer than an unchanged
/// binary (a no-op build does not touch it).
static BUILD_LOCK: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// Path of a workspace binary (e.g. `fleetgate-hub`) in the same target
/// directory as the running test, building it with cargo if it is missing
/// (as when only one package's tests were asked for) or older than a workspace
/// source file (`cargo test -p fleetgate-tests` builds no other package's
/// binaries, so an edited hub would otherwise be tested as its old build).
pub fn bin_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test> → target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .to_path_buf();
    let path = profile_dir.join(name);
    let mut checked = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if checked.insert(name.to_owned()) && !fresh(&path) {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        // `--workspace`: run from this package's directory, a bare `--bin` only looks in
        // fleetgate-tests, which has no binaries.
        cmd.args(["build", "--workspace", "--bin", name]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("running cargo build");
        assert!(st.success(), "cargo build --bin {name} failed");
    }
    path
}

/// Builds the workspace binaries a test runs, where they are stale, before
/// the test's own time bound starts: a nested `cargo build` on a loaded
/// machine takes minutes, and inside a bound it turns a slow build into a
/// timed-out test (call it first in every test that bounds its whole body).
pub fn binaries(names: &[&str]) {
    for name in names {
        bin_path(name);
    }
}

/// Runs `cmd` to its end and returns its output, bounded (60 s): a process
/// that hangs is killed and fails the test naming `what`, where a blocking
/// `Command::output` would hold the test's own timeout off too.
pub async fn output(cmd: Command, what: &str) -> std::process::Output {
    let mut cmd = tokio::process::Command::from(cmd);
    cmd.kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .unwrap_or_else(|_| panic!("{what}: still running after 60 s"))
        .unwrap_or_else(|e| panic!("{what}: {e}"))
}

/// Whether `bin` exists and is newer than every source file of the workspace
/// (crate sources, protos, migrations, dashboard assets, manifests). After
/// `cargo test --workspace` every binary is fresh, so no nested build runs.
fn fresh(bin: &Path) -> bool {
    let Ok(built) = std::fs::metadata(bin).and_then(|m| m.modified()) else {
        return false;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let Ok(entries) = std::fs::read_dir(root) else {
        return true;
    };
    entries.flatten().all(|crate_dir| {
        let dir = crate_dir.path();
        // `target` and hidden directories hold no sources.
        let name = crate_dir.file_name();
        // `tests` and `bench` are no binary's dependency.
        if ["target", "tests", "bench"].iter().any(|n| name == *n)
            || name.to_string_lossy().starts_with('.')
            || !dir.is_dir()
        {
            return true;
        }
        ["src", "proto", "assets", "build.rs", "Cargo.toml"]
            .iter()
            .all(|sub| older_than(&dir.join(sub), built))
            && (name != "migrations" || older_than(&dir, built))
    })
}

/// Whether every file at or under `path` was modified before `built` (a
/// missing path counts as older).
fn older_than(path: &Path, built: std::time::SystemTime) -> bool {
    let Ok(meta) = std::fs::metadata(path) else {
        return true;
    };
    if meta.is_dir() {
        std::fs::read_dir(path).map_or(true, |entries| {
            entries.flatten().all(|e| older_than(&e.path(), built))
        })
    } else {
        meta.modified().map_or(true, |m| m <= built)
    }
}

/// `fleetgate-hub serve` on `database_url` with HTTP and gRPC on the given
/// loopback ports, `admin` as the bootstrap admin token and warn-level logs;
/// stdin and stdout are null, stderr is the caller's to choose before spawning.
pub fn hub_serve(database_url: &str, http: u16, grpc: u16, admin: &str) -> Command {
    hub_serve_with(&bin_path("fleetgate-hub"), database_url, http, grpc, admin)
}

/// [`hub_serve`] of the hub binary at `bin` (another release's, see
/// [`crate::release_binaries`]).
pub fn hub_serve_with(
    bin: &Path,
    database_url: &str,
    http: u16,
    grpc: u16,
    admin: &str,
) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .env("DATABASE_URL", database_url)
        .env("FLEETGATE_HTTP_ADDR", format!("127.0.0.1:{http}"))
        .env("FLEETGATE_GRPC_ADDR", format!("127.0.0.1:{grpc}"))
        .env("FLEETGATE_ADMIN_TOKEN", admin)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

/// `fleetgate-spoke` for `cluster` (its `kubeconfig`, its spoke `token`)
/// connected to the hub's gRPC port on loopback, in namespace
/// fleetgate-system, health and metrics on `http`, warn-level logs; stdin and
/// stdout are null, the rest (report debounce, reconnect, held kinds, stderr)
/// is the caller's to add before spawning.
pub fn spoke_connect(
    cluster: &str,
    hub_grpc: u16,
    kubeconfig: &Path,
    token: &str,
    http: u16,
) -> Command {
    spoke_connect_with(
        &bin_path("fleetgate-spoke"),
        cluster,
        hub_grpc,
        kubeconfig,
        token,
        http,
    )
}

/// [`spoke_connect`] of the spoke binary at `bin` (another release's, see
/// [`crate::release_binaries`]).
pub fn spoke_connect_with(
    bin: &Path,
    cluster: &str,
    hub_grpc: u16,
    kubeconfig: &Path,
    token: &str,
    http: u16,
) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(["--cluster", cluster])
        .args(["--hub-url", &format!("http://127.0.0.1:{hub_grpc}")])
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(["--namespace", "fleetgate-system"])
        .args(["--http-addr", &format!("127.0.0.1:{http}")])
        .env("FLEETGATE_SPOKE_TOKEN", token)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    cmd
}

/// Polls `{base}/readyz` until it answers `status` (60 s at most); panics
/// when `hub` exits first.
pub async fn wait_readyz(client: &reqwest::Client, base: &str, status: u16, hub: &mut ChildGuard) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = client.get(format!("{base}/readyz")).send().await
            && r.status().as_u16() == status
        {
            return;
        }
        if let Ok(Some(st)) = hub.0.try_wait() {
            panic!("hub exited: {st}");
        }
        assert!(
            Instant::now() < deadline,
            "/readyz not {status} within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Kills (SIGKILL) and reaps the child when dropped, so a failing test leaves
/// no stray process behind.
#[derive(Debug)]
pub struct ChildGuard(pub Child);

impl ChildGuard {
    /// Sends SIGTERM (graceful shutdown) via `kill`.
    pub fn terminate(&self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `f` (another process's HTTP API: nothing to subscribe to) every
/// 100 ms until it yields a value; panics naming `what` after 60 s.
pub async fn poll<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let fut = async {
        loop {
            if let Some(v) = f().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}
