//! A throwaway PostgreSQL for tests.
//!
//! With `DATABASE_URL` set, each test gets a fresh database on that server.
//! Otherwise the first test in a process starts a private server (initdb into a
//! temp dir, loopback only, fsync off; as root it runs as the `postgres` user
//! via `runuser`), and a watchdog stops it and removes its files when the test
//! process exits. Each [`test_db`] call creates a new, empty database.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use sqlx::Connection;

/// A fresh, empty database for one test.
#[derive(Debug, Clone)]
pub struct TestDb {
    /// Connection URL of the test database.
    pub url: String,
    /// Connection URL of the server's `postgres` database (for admin work
    /// such as `pg_terminate_backend`).
    pub admin_url: String,
    /// The database's name.
    pub name: String,
}

struct Server {
    /// URL without a database name, e.g. `postgres://postgres@127.0.0.1:5432`.
    base: String,
    /// Query string appended to every URL (may be empty).
    query: String,
}

static SERVER: OnceLock<std::result::Result<Server, String>> = OnceLock::new();
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Creates a fresh database on the shared test server (starting it first if
/// needed) and returns its URL.
pub async fn test_db() -> TestDb {
    let server = SERVER
        .get_or_init(|| start_or_reuse().map_err(|e| format!("{e:#}")))
        .as_ref()
        .unwrap_or_else(|e| panic!("cannot start test PostgreSQL: {e}"));
    let name = format!(
        "fg_{}_{}_{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed),
        rand_suffix()
    );
    let admin_url = format!("{}/postgres{}", server.base, server.query);
    let mut conn = tokio::time::timeout(
        Duration::from_secs(30),
        sqlx::PgConnection::connect(&admin_url),
    )
    .await
    .expect("timed out connecting to test PostgreSQL")
    .expect("connecting to test PostgreSQL");
    sqlx::query(&format!("CREATE DATABASE \"{name}\""))
        .execute(&mut conn)
        .await
        .expect("CREATE DATABASE");
    let _ = conn.close().await;
    TestDb {
        url: format!("{}/{name}{}", server.base, server.query),
        admin_url,
        name,
    }
}

fn rand_suffix() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    nanos % 100_000
}

fn start_or_reuse() -> Result<Server> {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        return Ok(split_url(&url));
    }
    start_private_server()
}

/// Splits `postgres://user@host:port/db?x=y` into base (`postgres://user@host:port`)
/// and query (`?x=y`).
fn split_url(url: &str) -> Server {
    let (head, query) = match url.find('?') {
        Some(i) => (&url[..i], url[i..].to_string()),
        None => (url, String::new()),
    };
    let scheme_end = head.find("://").map(|i| i + 3).unwrap_or(0);
    let base = match head[scheme_end..].find('/') {
        Some(i) => head[..scheme_end + i].to_string(),
        None => head.to_string(),
    };
    Server { base, query }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// Finds PostgreSQL's server binaries: `pg_config --bindir`, Debian's
/// `/usr/lib/postgresql/<ver>/bin` (newest first), then `PATH`.
pub fn pg_bindir() -> Result<PathBuf> {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("initdb").exists() && dir.join("postgres").exists() {
            return Ok(dir);
        }
    }
    if let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut dirs: Vec<(u32, PathBuf)> = entries
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let v = e.file_name().to_string_lossy().parse::<u32>().ok()?;
                Some((v, e.path().join("bin")))
            })
            .filter(|(_, p)| p.join("initdb").exists())
            .collect();
        dirs.sort();
        if let Some((_, p)) = dirs.pop() {
            return Ok(p);
        }
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':') {
        let p = Path::new(dir);
        if p.join("initdb").exists() && p.join("postgres").exists() {
            return Ok(p.to_path_buf());
        }
    }
    bail!("PostgreSQL server binaries (initdb, postgres) not found; install postgresql or set DATABASE_URL")
}

fn start_private_server() -> Result<Server> {
    let bindir = pg_bindir()?;
    let root = is_root();
    let dir = tempfile::Builder::new()
        .prefix("fleetgate-pg-")
        .tempdir()
        .context("temp dir")?
        .keep();
    let data = dir.join("data");
    let sock = dir.join("sock");
    std::fs::create_dir_all(&sock)?;
    if root {
        let st = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(&dir)
            .status()?;
        if !st.success() {
            bail!("chown {} to postgres failed", dir.display());
        }
    }
    let as_pg = |bin: &str| -> Command {
        if root {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(bindir.join(bin));
            c
        } else {
            Command::new(bindir.join(bin))
        }
    };
    let out = as_pg("initdb")
        .args(["-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync", "-D"])
        .arg(&data)
        .stdin(Stdio::null())
        .output()
        .context("running initdb")?;
    if !out.status.success() {
        bail!("initdb failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let port = crate::process::free_port();
    let log = std::fs::File::create(dir.join("postgres.log"))?;
    let child = as_pg("postgres")
        .arg("-D")
        .arg(&data)
        .arg("-k")
        .arg(&sock)
        .args([
            "-p",
            &port.to_string(),
            "-c",
            "listen_addresses=127.0.0.1",
            "-c",
            "fsync=off",
            "-c",
            "synchronous_commit=off",
            "-c",
            "full_page_writes=off",
            "-c",
            "max_connections=500",
            "-c",
            "shared_buffers=128MB",
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("starting postgres")?;
    // The watchdog outlives nothing: when this test process exits it stops the
    // server (SIGINT = fast shutdown) and removes the data directory.
    // `runuser` does not forward signals, so it signals the postmaster itself
    // (first line of postmaster.pid).
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do sleep 0.5; done; \
         pg=$(head -n1 '{data}/postmaster.pid' 2>/dev/null); [ -n \"$pg\" ] || pg={child}; \
         kill -INT $pg 2>/dev/null; \
         for i in $(seq 1 40); do kill -0 $pg 2>/dev/null || break; sleep 0.25; done; \
         kill -KILL $pg {child} 2>/dev/null; rm -rf '{dir}'",
        me = std::process::id(),
        child = child.id(),
        data = data.display(),
        dir = dir.display()
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting watchdog")?;
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // The port opens before recovery ends ("the database system is
        // starting up"); the log line says when connections are accepted.
        if TcpStream::connect(("127.0.0.1", port)).is_ok()
            && std::fs::read_to_string(dir.join("postgres.log"))
                .is_ok_and(|l| l.contains("ready to accept connections"))
        {
            break;
        }
        if Instant::now() > deadline {
            let log = std::fs::read_to_string(dir.join("postgres.log")).unwrap_or_default();
            bail!("postgres did not start within 30s:\n{log}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(Server {
        base: format!("postgres://postgres@127.0.0.1:{port}"),
        query: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls() {
        let s = split_url("postgres://u:p@h:1/db?sslmode=disable");
        assert_eq!(s.base, "postgres://u:p@h:1");
        assert_eq!(s.query, "?sslmode=disable");
        let s = split_url("postgres://h");
        assert_eq!(s.base, "postgres://h");
        assert_eq!(s.query, "");
    }

    #[tokio::test]
    async fn gives_fresh_databases() {
        let a = test_db().await;
        let b = test_db().await;
        assert_ne!(a.name, b.name);
        let mut conn = sqlx::PgConnection::connect(&a.url).await.unwrap();
        let one: (i32,) = sqlx::query_as("select 1").fetch_one(&mut conn).await.unwrap();
        assert_eq!(one.0, 1);
    }
}
