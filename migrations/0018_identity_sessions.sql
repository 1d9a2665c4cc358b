-- Single sign-on: dashboard sessions of people signed in through the OpenID
-- provider, and the authorization requests waiting for their callback. Both
-- in PostgreSQL so any replica serves any step. Only hashes of the session
-- secret and of `state` are stored; the refresh token is sealed with a key
-- derived from the session secret, which only the browser holds.

create table identity_sessions (
    id              uuid primary key,
    secret_hash     bytea not null unique,
    issuer          text not null,
    subject         text not null,
    name            text not null,
    email           text,
    groups          text[] not null default '{}',
    created_at      timestamptz not null,
    -- When the session ends unless refreshed: never after the provider's
    -- ID token, nor after max_expires_at.
    expires_at      timestamptz not null,
    max_expires_at  timestamptz not null,
    refresh_sealed  bytea,
    ended_at        timestamptz,
    ended_by        text,
    end_reason      text
);

create index identity_sessions_person on identity_sessions (issuer, subject)
    where ended_at is null;

create table identity_logins (
    state_hash      bytea primary key,
    nonce           text not null,
    code_verifier   text not null,
    return_to       text not null,
    expires_at      timestamptz not null
);
