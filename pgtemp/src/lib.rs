//! A throwaway PostgreSQL server for the test harness and `fleetgate demo`:
//! initdb into a temp dir, loopback only, fsync off; as root the server runs
//! as `postgres` via `runuser`. Dropping the handle stops the server and
//! deletes its files; a watchdog does the same when the owning process exits
//! without dropping it (a static in a test binary, SIGKILL, abort). Outage
//! tests can stop the server and start it again.
#![forbid(unsafe_code)]

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Why the server could not be started.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No `initdb`/`postgres` binaries anywhere we look.
    #[error(
        "PostgreSQL server binaries (initdb, postgres) not found: install PostgreSQL \
         (Debian: apt-get install postgresql) or set DATABASE_URL"
    )]
    NotInstalled,
    /// A step of setting the server up failed.
    #[error("throwaway PostgreSQL: {step}: {message}")]
    Start { step: &'static str, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A running private PostgreSQL server; stopped (and its files removed) on drop.
/// [`TempPostgres::stop`] and [`TempPostgres::restart`] stop and start it
/// again on the same port and data (outage tests).
#[derive(Debug)]
pub struct TempPostgres {
    /// `postgres://postgres@127.0.0.1:PORT` (no database name).
    pub base_url: String,
    /// `base_url` + `/postgres`.
    pub url: String,
    dir: PathBuf,
    bin: PathBuf,
    root: bool,
    port: u16,
    /// The server process; `None` while stopped.
    child: Option<Child>,
}

fn err(step: &'static str, e: impl std::fmt::Display) -> Error {
    Error::Start {
        step,
        message: e.to_string(),
    }
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A command running PostgreSQL's binary `name`, as the `postgres` user when
/// we are root (PostgreSQL refuses to run as root).
fn as_pg(bin: &Path, root: bool, name: &str) -> Command {
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin.join(name));
        c
    } else {
        Command::new(bin.join(name))
    }
}

/// PostgreSQL's server binaries: `pg_config --bindir`, Debian's
/// `/usr/lib/postgresql/<newest>/bin`, then `PATH`.
pub fn bindir() -> Result<PathBuf> {
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
    Err(Error::NotInstalled)
}

impl TempPostgres {
    /// Starts a server and waits (at most 30 s) until it accepts connections.
    pub fn start() -> Result<TempPostgres> {
        let bin = bindir()?;
        let root = is_root();
        let dir = tempfile::Builder::new()
            .prefix("fleetgate-pg-")
            .tempdir()
            .map_err(|e| err("temp dir", e))?
            .keep();
        let data = dir.join("data");
        if root {
            let ok = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(&dir)
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                return Err(err("chown", "to the postgres user failed"));
            }
        }
        let out = as_pg(&bin, root, "initdb")
            .args([
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--no-sync",
                "-D",
            ])
            .arg(&data)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| err("initdb", e))?;
        if !out.status.success() {
            return Err(err("initdb", String::from_utf8_lossy(&out.stderr)));
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| err("free port", e))?;
        let base_url = format!("postgres://postgres@127.0.0.1:{port}");
        let mut pg = TempPostgres {
            url: format!("{base_url}/postgres"),
            base_url,
            dir,
            bin,
            root,
            port,
            child: None,
        };
        pg.spawn()?;
        spawn_watchdog(&data, &pg.dir)?;
        Ok(pg)
    }

    /// Starts the server process and waits (at most 30 s) until it accepts
    /// connections.
    fn spawn(&mut self) -> Result<()> {
        let data = self.dir.join("data");
        let log_path = self.dir.join("postgres.log");
        // A fresh log each start, so "ready" below is this start's.
        let log = std::fs::File::create(&log_path).map_err(|e| err("log", e))?;
        let log2 = log.try_clone().map_err(|e| err("log", e))?;
        let child = as_pg(&self.bin, self.root, "postgres")
            .arg("-D")
            .arg(&data)
            .args(["-k", ""])
            .args(["-p", &self.port.to_string()])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .args(["-c", "synchronous_commit=off", "-c", "full_page_writes=off"])
            .args(["-c", "max_connections=500", "-c", "shared_buffers=128MB"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            // Its own process group: a terminal's Ctrl-C (SIGINT to the whole
            // foreground group) must not kill the database under a hub that is
            // still draining; the owner stops it last, on drop.
            .process_group(0)
            .spawn()
            .map_err(|e| err("starting postgres", e))?;
        self.child = Some(child);
        // Ready when the server says so (the port opens during recovery, when
        // connections still fail with "the database system is starting up").
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let log = std::fs::read_to_string(&log_path).unwrap_or_default();
            if log.contains("ready to accept connections") {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(err("did not start within 30 s", log));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server (fast shutdown: open connections are terminated) and
    /// waits for it to exit; its data stays for [`TempPostgres::restart`].
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SIGINT = fast shutdown. `runuser` does not forward signals, so
        // signal the postmaster itself.
        let pid = self
            .postmaster_pid()
            .unwrap_or_else(|| child.id().to_string());
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let alive = Command::new("kill")
                .args(["-0", &pid])
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !alive {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Starts a stopped server again on the same port with the same data.
    pub fn restart(&mut self) -> Result<()> {
        if self.child.is_some() {
            return Ok(());
        }
        self.spawn()
    }

    /// The server's files (removed on drop).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn postmaster_pid(&self) -> Option<String> {
        let pid = std::fs::read_to_string(self.dir.join("data/postmaster.pid")).ok()?;
        pid.lines().next().map(|l| l.trim().to_string())
    }
}

/// If the owning process exits without dropping [`TempPostgres`], stop the
/// server (the postmaster named in its pid file, which exists exactly while
/// it runs) and remove its files anyway.
fn spawn_watchdog(data: &Path, dir: &Path) -> Result<()> {
    let script = format!(
        "while kill -0 {me} 2>/dev/null; do sleep 0.5; done; \
         pg=$(head -n1 '{data}/postmaster.pid' 2>/dev/null); \
         if [ -n \"$pg\" ]; then kill -INT $pg 2>/dev/null; \
           for i in $(seq 1 40); do kill -0 $pg 2>/dev/null || break; sleep 0.25; done; \
           kill -KILL $pg 2>/dev/null; fi; \
         rm -rf '{dir}'",
        me = std::process::id(),
        data = data.display(),
        dir = dir.display()
    );
    Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map(|_| ())
        .map_err(|e| err("watchdog", e))
}

impl Drop for TempPostgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_accepts_connections_and_cleans_up_on_drop() {
        let pg = TempPostgres::start().unwrap_or_else(|e| panic!("{e}"));
        let port: u16 = pg.base_url.rsplit(':').next().unwrap().parse().unwrap();
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        assert!(pg.url.ends_with("/postgres"));
        let dir = pg.dir().to_path_buf();
        assert!(dir.join("data/PG_VERSION").exists());
        // The server runs in a process group of its own, so a terminal's
        // Ctrl-C (SIGINT to the foreground group) leaves it to the owner.
        let pid = std::fs::read_to_string(dir.join("data/postmaster.pid")).unwrap();
        let pid = pid.lines().next().unwrap().trim().to_string();
        assert_ne!(
            pgrp(&pid),
            pgrp("self"),
            "postgres shares our process group"
        );
        drop(pg);
        assert!(!dir.exists(), "files removed");
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "server stopped"
        );
    }

    #[test]
    fn stops_and_restarts_on_the_same_port() {
        let mut pg = TempPostgres::start().unwrap_or_else(|e| panic!("{e}"));
        let port: u16 = pg.base_url.rsplit(':').next().unwrap().parse().unwrap();
        pg.stop();
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "server stopped"
        );
        assert!(pg.dir().join("data/PG_VERSION").exists(), "data kept");
        pg.restart().unwrap_or_else(|e| panic!("{e}"));
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());
        let dir = pg.dir().to_path_buf();
        drop(pg);
        assert!(!dir.exists(), "files removed");
    }

    /// The process group of a process (field 5 of /proc/<pid>/stat, after
    /// the parenthesised command name).
    fn pgrp(pid: &str) -> String {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(2).unwrap().to_string()
    }
}
