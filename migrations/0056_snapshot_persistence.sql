-- Two facts about a cluster's snapshot on its status (issue 47): whether its spoke could
-- persist the snapshot it enforces in the cluster (from the spoke's report; null from
-- spokes that predate it), and whether the hub held the cluster closed because its
-- snapshot was over its budget (set by the replica that sent it, cleared by the next
-- snapshot within budget). Expand only: replicas of the previous release ignore them.
alter table cluster_connections
    add column snapshot_persistence jsonb,
    add column snapshot_over_budget jsonb;
