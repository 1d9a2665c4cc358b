-- Change-ticket admission webhooks (docs/approvals.md#admission-webhooks): asked
-- synchronously before an override (or an approval) is accepted.
create table admission_webhooks (
    name           text        primary key,
    url            text        not null,
    operations     text[]      not null default '{override}',
    timeout_ms     integer     not null default 5000 check (timeout_ms between 1 and 30000),
    failure_policy text        not null default 'Fail' check (failure_policy in ('Fail', 'Ignore')),
    ca_bundle      text,
    created_at     timestamptz not null,
    updated_at     timestamptz not null
);
