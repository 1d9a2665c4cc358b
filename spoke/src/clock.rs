//! Where the spoke gets "now" for evaluating gates. The wall clock in
//! production; a manual clock in tests, so a window edge or a request's
//! expiry is reached by moving the clock instead of waiting for it. Loops that
//! sleep until the next transition also wake when a manual clock moves.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

/// The system clock (default) or a manual one shared by its clones.
#[derive(Clone, Debug, Default)]
pub struct Clock(Option<Arc<watch::Sender<DateTime<Utc>>>>);

impl Clock {
    /// A clock standing at `at` until [`Clock::set`] or [`Clock::advance`].
    pub fn manual(at: DateTime<Utc>) -> Self {
        Self(Some(Arc::new(watch::channel(at).0)))
    }

    /// The current instant.
    pub fn now(&self) -> DateTime<Utc> {
        match &self.0 {
            Some(t) => *t.borrow(),
            None => Utc::now(),
        }
    }

    /// Sets a manual clock (no effect on the system clock).
    pub fn set(&self, at: DateTime<Utc>) {
        if let Some(t) = &self.0 {
            t.send_replace(at);
        }
    }

    /// Moves a manual clock forward.
    pub fn advance(&self, by: chrono::Duration) {
        if let Some(t) = &self.0 {
            t.send_modify(|now| *now += by);
        }
    }

    /// Resolves when a manual clock is moved; never for the system clock.
    pub fn moved(&self) -> Moved {
        Moved(self.0.as_ref().map(|t| t.subscribe()))
    }
}

/// Subscription to a manual clock's moves.
pub struct Moved(Option<watch::Receiver<DateTime<Utc>>>);

impl Moved {
    /// The next move (pending forever for the system clock).
    pub async fn next(&mut self) {
        match &mut self.0 {
            Some(rx) => {
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
            None => std::future::pending::<()>().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manual_clock_moves_only_when_told_and_says_so() {
        let t0 = DateTime::parse_from_rfc3339("2026-11-24T10:00:00Z")
            .unwrap()
            .to_utc();
        let clock = Clock::manual(t0);
        let mut moved = clock.moved();
        assert_eq!(clock.clone().now(), t0);
        clock.advance(chrono::Duration::hours(1));
        tokio::time::timeout(std::time::Duration::from_secs(1), moved.next())
            .await
            .expect("woken by the move");
        assert_eq!(clock.now(), t0 + chrono::Duration::hours(1));
        let system = Clock::default();
        let mut never = system.moved();
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(10), never.next())
                .await
                .is_err()
        );
    }
}
