-- Self-service sessions: a person sees their sessions by device and last
-- use, and ends the ones they do not recognise. `last_used_at` is written at
-- most once a minute per session (not on every request).

alter table identity_sessions
    add column user_agent   text,
    add column last_used_at timestamptz;

update identity_sessions set last_used_at = created_at where last_used_at is null;
