-- Status reports are written only when their content changed. A spoke
-- re-sends its full report as a heartbeat (every 30 s by default); rewriting
-- every object row each time cost a 10,000-cluster fleet with 100 objects
-- each ~33,000 row writes/s while nothing changed. The hub stores a hash of
-- each cluster's last written report content here; an unchanged report only
-- refreshes `last_seen_at` / `reported_at` (and those at most about once a
-- minute), in the connection row that writes never lock.
alter table cluster_connections
    add column report_hash bytea,        -- SHA-256 of the stored report's content
    add column reported_at timestamptz;  -- latest report received (object rows keep
                                         -- the time their content was last written)
