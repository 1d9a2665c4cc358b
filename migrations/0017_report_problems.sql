-- What the hub changed in or left out of each cluster's latest stored report
-- (objects with U+0000 stored with U+FFFD, objects it could not store), and
-- the last error of a report the database refused as a whole (issue 40).
alter table cluster_connections
    add column report_problems       jsonb       not null default '[]'::jsonb,
    add column report_problem_total  integer     not null default 0,
    add column report_write_error    text,
    add column report_write_error_at timestamptz;
