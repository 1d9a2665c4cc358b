//! The database, through the service layer, as the fan-out's snapshot source:
//! clusters are read in batches (one fleet read for many clusters), and a
//! cluster missing from a read was deleted.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::{Desired, SnapshotSource};
use crate::Result;
use crate::service::Service;
use crate::service::fleet::Snapshot;

impl SnapshotSource for Service {
    fn load<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, Result<Desired>> {
        Box::pin(async move {
            let names = [cluster.to_string()];
            let mut loaded = self.load_many(&names).await?;
            Ok(loaded.pop().map_or(Desired::Gone, |(_, d)| d))
        })
    }

    fn load_many<'a>(
        &'a self,
        clusters: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<(String, Desired)>>> {
        Box::pin(async move {
            let mut found: HashMap<String, Desired> = self
                .snapshots(clusters)
                .await?
                .into_iter()
                .map(|s| (s.cluster.clone(), Desired::Snapshot(Arc::new(s))))
                .collect();
            Ok(clusters
                .iter()
                .map(|c| (c.clone(), found.remove(c).unwrap_or(Desired::Gone)))
                .collect())
        })
    }

    fn load_all(&self) -> BoxFuture<'_, Result<Vec<Arc<Snapshot>>>> {
        Box::pin(async move {
            Ok(self
                .all_snapshots()
                .await?
                .into_iter()
                .map(Arc::new)
                .collect())
        })
    }
}
