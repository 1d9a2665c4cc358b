-- Each spoke's connection bookkeeping (last seen, clock offset, serving
-- replica, version) moves off `clusters` into its own table. Writes stamp
-- `clusters.desired_revision` on many rows in name order; keepalives, reports
-- and connects updated the same rows in their own order, so a write and the
-- bookkeeping could deadlock (PostgreSQL aborted one: a 500 to the caller).
-- Bookkeeping now touches only this table, whose rows writes never lock.
create table cluster_connections (
    cluster           text        primary key references clusters (name) on delete cascade,
    last_seen_at      timestamptz,
    spoke_version     text,
    connected         boolean     not null default false,
    connected_replica text,
    clock_offset_ms   bigint
) with (fillfactor = 50); -- frequent stamps stay HOT updates, as on clusters (0002)

insert into cluster_connections
    (cluster, last_seen_at, spoke_version, connected, connected_replica, clock_offset_ms)
select name, last_seen_at, spoke_version, connected, connected_replica, clock_offset_ms
from clusters;

-- The old columns stay (unused, no longer written) so that replicas of the
-- previous release keep working during a rolling upgrade; a later migration
-- drops them once no such replica can be running.
