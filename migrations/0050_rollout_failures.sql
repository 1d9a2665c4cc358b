-- A released cluster whose rollout wave failed (it halted the rollout, or maxFailures
-- tolerated it): when, and why (the failing object and its Ready message), as the driver
-- judged it. Fleet reads (`fleetgate status`, the dashboard grid, gRPC) mark the cluster from
-- these columns without judging every cluster's health on each read. An operator's resume
-- clears them: the wave is judged afresh.
alter table rollout_clusters
    add column failed_at timestamptz,
    add column failure text;
create index rollout_clusters_failed on rollout_clusters (rollout_id) where failed_at is not null;
