//! A replica's parsed copy of every access policy ([`PolicyCache`]). A leaf of `service/`:
//! the service holds it, `resolve` reads through it.

use std::sync::{Arc, Mutex, MutexGuard};

use fleetgate_api_types::AccessPolicy;
use sqlx::PgConnection;

use crate::db::access_policies;
use crate::{Error, Result};

/// A replica's parsed copy of every access policy, valid while
/// `fleet_revision.access_policies_version` (set by a trigger on every
/// change, migration 0032) holds the value it was read at. An
/// authentication then costs a one-row read instead of reading and parsing
/// every policy.
#[derive(Debug, Default)]
pub struct PolicyCache(Mutex<Option<(uuid::Uuid, Arc<Vec<AccessPolicy>>)>>);

impl PolicyCache {
    fn lock(&self) -> MutexGuard<'_, Option<(uuid::Uuid, Arc<Vec<AccessPolicy>>)>> {
        // A panicking holder leaves at worst a stale copy, which the version
        // check never hands out.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every policy as committed now. The version is read before the
    /// policies (two statements, the second seeing at least what the first
    /// saw): a change committed in between is kept under the older version
    /// and read again next time, never the other way round.
    pub async fn current(&self, conn: &mut PgConnection) -> Result<Arc<Vec<AccessPolicy>>> {
        let version = access_policies::version(conn).await?;
        if let Some((v, all)) = self.lock().as_ref()
            && *v == version
        {
            return Ok(all.clone());
        }
        let all = Arc::new(
            access_policies::all(conn)
                .await?
                .into_iter()
                .map(|r| stored_policy(&r.manifest))
                .collect::<Result<Vec<_>>>()?,
        );
        *self.lock() = Some((version, all.clone()));
        Ok(all)
    }
}

/// Parses a stored manifest (validated when written).
pub(crate) fn stored_policy(manifest: &serde_json::Value) -> Result<AccessPolicy> {
    serde_json::from_value(manifest.clone())
        .map_err(|e| Error::Internal(format!("stored access policy unreadable: {e}")))
}
