-- Connection liveness costs O(replicas), not O(clusters). Each hub replica
-- renews one lease row every few seconds; a cluster's connection row names
-- the replica serving its stream and is written only on connect, disconnect
-- and report content change. A cluster counts as connected while its stream
-- is recorded open and its replica's lease has not expired, so a crashed
-- replica's spokes read as disconnected once its lease runs out, and an idle
-- fleet's heartbeats write nothing at all (they used to stamp one row per
-- cluster per minute: ~180 rows/s for 10,000 clusters).
create table replica_leases (
    replica      text        primary key,
    started_at   timestamptz not null,
    heartbeat_at timestamptz not null,  -- the replica's latest renewal
    expires_at   timestamptz not null   -- heartbeat_at + the replica's lease time
) with (fillfactor = 50); -- renewals stay HOT updates
