-- Override requests through a gate with `spec.approval` wait here, not in `overrides`:
-- every reader of overrides (snapshots, evaluation, the opening fence) sees only
-- approved ones, so a pending request can never reach a spoke.
create table approval_requests (
    id              uuid        primary key,
    gate            text        not null references gates (name) on delete cascade,
    state           text        not null check (state in ('open', 'closed')),
    -- ClusterScope JSON ({names, selector}); null = the gate's whole scope.
    scope           jsonb,
    -- The requested override: its duration (Go-style; null = until cancelled) and start
    -- (null = when approved).
    duration        text,
    starts_at       timestamptz,
    reason          text        not null,
    ticket          text,
    -- Display name of the requester, and the person behind it (`person <iss> <sub>`,
    -- `token <name>`, ...): approvers are compared on this key, never on the session.
    requester       text        not null,
    requester_key   text        not null,
    required        integer     not null check (required between 1 and 10),
    status          text        not null default 'pending'
                                check (status in ('pending', 'approved', 'rejected', 'expired', 'cancelled')),
    created_at      timestamptz not null,
    expires_at      timestamptz not null check (expires_at > created_at),
    decided_at      timestamptz,
    decided_by      text,
    decision_reason text,
    -- The override an approval created.
    override_id     uuid
);
create index approval_requests_pending on approval_requests (expires_at) where status = 'pending';
create index approval_requests_created on approval_requests (created_at, id);
create index approval_requests_by_gate on approval_requests (gate);

create table approvals (
    request_id   uuid        not null references approval_requests (id) on delete cascade,
    approver_key text        not null,
    approver     text        not null,
    reason       text,
    at           timestamptz not null,
    primary key (request_id, approver_key)
);

-- Break-glass overrides (an admin skipping approval) and overrides an approval created.
alter table overrides add column emergency boolean not null default false;
alter table overrides add column approval_request uuid;
