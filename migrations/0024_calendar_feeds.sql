-- Calendar feeds (`calendar.url` windows): one row per (gate, window), kept in step with the
-- gate's manifest by every gate write. The last good copy (body, validators, expanded
-- occurrences) survives failed fetches; `lease_owner`/`lease_until` let one replica at a time
-- fetch a due feed (claimed with FOR UPDATE SKIP LOCKED, a crashed replica's lease expires).
create table calendar_feeds (
    gate                 text        not null references gates (name) on delete cascade,
    window_name          text        not null,
    url                  text        not null,
    -- From the manifest (kept in step by gate writes): refresh and maxStale, in seconds.
    refresh_seconds      bigint      not null,
    max_stale_seconds    bigint      not null,
    -- auth.secretRef.name: the secret the hub sends as the Authorization header.
    secret_name          text,
    -- The last good copy.
    body                 text,
    body_sha256          bytea,
    etag                 text,
    last_modified        text,
    -- The occurrences of `body` over [expanded_from, expanded_to), the events it rejected,
    -- and the feed's own REFRESH-INTERVAL / X-PUBLISHED-TTL.
    occurrences          jsonb       not null default '[]',
    rejected             jsonb       not null default '[]',
    expanded_from        timestamptz,
    expanded_to          timestamptz,
    refresh_hint_seconds bigint,
    -- Last successful fetch (200 or 304), last change of content, last attempt and its error.
    fetched_at           timestamptz,
    changed_at           timestamptz,
    attempted_at         timestamptz,
    last_error           text,
    failures             integer     not null default 0,
    -- The fetch time carried to spokes (their stale_at = this + maxStale): moved on a content
    -- change, a horizon move, or once it is maxStale/2 old, so spokes are not re-sent every
    -- refresh.
    published_fetched_at timestamptz,
    -- When the feed went stale, once that has been announced (calendar.stale, once per spell).
    stale_announced_at   timestamptz,
    next_fetch_at        timestamptz not null,
    lease_owner          text,
    lease_until          timestamptz,
    primary key (gate, window_name)
);

create index calendar_feeds_due on calendar_feeds (next_fetch_at);
