-- A session refresh no longer holds the session's row lock (and a database
-- connection) while the identity provider answers: the refreshing request
-- claims the row for a bounded time (`refresh_claim_until`, on the database's
-- clock), calls the provider with no transaction open, and writes the result
-- only if it still holds the claim and the session was not ended meanwhile.
alter table identity_sessions
    add column refresh_claim uuid,
    add column refresh_claim_until timestamptz;
