//! Running a transaction again when PostgreSQL aborts it for a deadlock
//! (`40P01`) or a serialization failure (`40001`): both mean "nothing was
//! written, try again", not a fault to answer 500 for. Bounded, with jittered
//! exponential backoff so the transactions that collided do not collide again.

use std::future::Future;
use std::time::Duration;

use crate::{Error, Result};

/// Attempts of one transaction at most (the first one included).
pub const MAX_ATTEMPTS: u32 = 5;

/// Backoff before the second attempt; doubles for each further one.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);

/// The SQLSTATE when `e` is an abort that a new attempt may not hit again.
pub fn retryable(e: &Error) -> Option<&'static str> {
    let Error::Database(sqlx::Error::Database(db)) = e else {
        return None;
    };
    match db.code().as_deref() {
        Some("40P01") => Some("deadlock_detected"),
        Some("40001") => Some("serialization_failure"),
        _ => None,
    }
}

/// A random pause in [½, 1] × `FIRST_BACKOFF` × 2^(attempt-1).
fn backoff(attempt: u32) -> Duration {
    let full = FIRST_BACKOFF * 2u32.pow(attempt.saturating_sub(1));
    full.mul_f64(rand::random_range(0.5..=1.0))
}

/// The attempts of one transaction: decides after each failure whether to
/// run it again, and waits the backoff first.
#[derive(Debug)]
pub struct Attempts {
    what: &'static str,
    n: u32,
}

impl Attempts {
    /// The first attempt of `what` (named in the log).
    pub fn new(what: &'static str) -> Self {
        Self { what, n: 1 }
    }

    /// After attempt failed with `e`: true (after the backoff) when it is
    /// worth another attempt, false when `e` is the answer.
    pub async fn again(&mut self, e: &Error) -> bool {
        let Some(reason) = retryable(e) else {
            return false;
        };
        if self.n >= MAX_ATTEMPTS {
            tracing::warn!(
                what = self.what,
                reason,
                attempts = self.n,
                "transaction aborted by PostgreSQL; giving up"
            );
            return false;
        }
        let pause = backoff(self.n);
        tracing::warn!(
            what = self.what,
            reason,
            attempt = self.n,
            ?pause,
            "transaction aborted by PostgreSQL; running it again"
        );
        tokio::time::sleep(pause).await;
        self.n += 1;
        true
    }
}

/// Runs `attempt` (one whole transaction: begin … commit) until it succeeds,
/// fails otherwise, or [`MAX_ATTEMPTS`] aborts in a row.
/// (A closure returning a future rather than an async closure: an async
/// closure's future is not provably `Send` in a spawned task, rust-lang/rust#110338.)
pub async fn transaction<T, F>(what: &'static str, mut attempt: impl FnMut() -> F) -> Result<T>
where
    F: Future<Output = Result<T>>,
{
    let mut attempts = Attempts::new(what);
    loop {
        match attempt().await {
            Err(e) if attempts.again(&e).await => {}
            result => return result,
        }
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter() {
        for attempt in 1..MAX_ATTEMPTS {
            let full = FIRST_BACKOFF * 2u32.pow(attempt - 1);
            let b = backoff(attempt);
            assert!(b >= full / 2 && b <= full, "{attempt}: {b:?}");
        }
    }

    #[test]
    fn only_database_aborts_are_retried() {
        assert_eq!(retryable(&Error::Internal("x".into())), None);
        assert_eq!(retryable(&Error::Database(sqlx::Error::PoolTimedOut)), None);
    }
}
