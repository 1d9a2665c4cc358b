//! A throwaway PostgreSQL for tests.
//!
//! With `DATABASE_URL` set, each test gets a fresh database on that server.
//! Otherwise the first test in a process starts a private server
//! ([`fleetgate_pgtemp`]: initdb into a temp dir, loopback only, fsync off; as
//! root it runs as the `postgres` user via `runuser`), and a watchdog stops it
//! and removes its files when the test process exits. Each [`test_db`] call
//! creates a new, empty database.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::Result;
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
    /// The private server, if we started one. Statics are never dropped: its
    /// watchdog stops it and removes its files when the test process exits.
    _private: Option<fleetgate_pgtemp::TempPostgres>,
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
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
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
    Server {
        base,
        query,
        _private: None,
    }
}

fn start_private_server() -> Result<Server> {
    let pg = fleetgate_pgtemp::TempPostgres::start()?;
    Ok(Server {
        base: pg.base_url.clone(),
        query: String::new(),
        _private: Some(pg),
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
        let one: (i32,) = sqlx::query_as("select 1")
            .fetch_one(&mut conn)
            .await
            .unwrap();
        assert_eq!(one.0, 1);
    }
}
