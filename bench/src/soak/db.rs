//! The soak's own PostgreSQL reads, robust against a database the hub keeps
//! busy: each attempt is bounded, and a transient failure (the pool timing
//! out, a connection error, an attempt over its bound) is printed and retried
//! until the caller's deadline instead of aborting a run of many minutes.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::{Error, Result};

/// One attempt at most this long.
pub const ATTEMPT_BOUND: Duration = Duration::from_secs(30);
/// Between failed attempts.
const RETRY_PAUSE: Duration = Duration::from_secs(1);

/// Whether `e` is worth another attempt (the database is busy or a
/// connection broke), rather than a mistake in the query.
fn transient(e: &sqlx::Error) -> bool {
    matches!(
        e,
        sqlx::Error::PoolTimedOut | sqlx::Error::Io(_) | sqlx::Error::Tls(_)
    )
}

/// One attempt of `query`: its value, or a transient failure described.
pub async fn attempt<T, Fut>(query: Fut) -> Result<Result<T, String>>
where
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    match tokio::time::timeout(ATTEMPT_BOUND, query).await {
        Ok(Ok(v)) => Ok(Ok(v)),
        Ok(Err(e)) if transient(&e) => Ok(Err(e.to_string())),
        Ok(Err(e)) => Err(e.into()),
        Err(_) => Ok(Err(format!("no answer within {ATTEMPT_BOUND:?}"))),
    }
}

/// Runs `query` until it answers, retrying transient failures (each printed
/// as `what`) until `deadline`.
pub async fn retrying<T, F, Fut>(
    what: &str,
    deadline: Instant,
    progress: &dyn Fn(&str),
    mut query: F,
) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, sqlx::Error>>,
{
    loop {
        match attempt(query()).await? {
            Ok(v) => return Ok(v),
            Err(e) if Instant::now() + RETRY_PAUSE < deadline => {
                progress(&format!(
                    "soak: {what}: PostgreSQL busy ({e}); retrying (the hub's writes saturate it)"
                ));
                tokio::time::sleep(RETRY_PAUSE).await;
            }
            Err(e) => {
                return Err(Error::Timeout(format!(
                    "soak: {what}: PostgreSQL did not answer before the deadline ({e})"
                )));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[tokio::test]
    async fn transient_failures_are_retried_others_are_not() {
        let calls = Cell::new(0);
        let deadline = Instant::now() + Duration::from_secs(10);
        let v = retrying("count", deadline, &|_| {}, || {
            calls.set(calls.get() + 1);
            let n = calls.get();
            async move {
                if n < 3 {
                    Err(sqlx::Error::PoolTimedOut)
                } else {
                    Ok(n)
                }
            }
        })
        .await
        .unwrap();
        assert_eq!(v, 3);

        let calls = Cell::new(0);
        let err = retrying("count", deadline, &|_| {}, || {
            calls.set(calls.get() + 1);
            async { Err::<(), _>(sqlx::Error::RowNotFound) }
        })
        .await
        .unwrap_err();
        assert!(matches!(err, Error::Db(sqlx::Error::RowNotFound)), "{err}");
        assert_eq!(calls.get(), 1, "a query error is not retried");

        // Past the deadline, a transient failure ends the wait with its cause.
        let err = retrying("count", Instant::now(), &|_| {}, || async {
            Err::<(), _>(sqlx::Error::PoolTimedOut)
        })
        .await
        .unwrap_err();
        assert!(err.to_string().contains("pool timed out"), "{err}");
    }
}
