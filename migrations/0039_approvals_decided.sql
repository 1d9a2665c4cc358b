-- The change streams read requests pending now or decided since a few minutes ago
-- (approval events): an index on the decision time of decided requests.
create index approval_requests_decided on approval_requests (decided_at) where status <> 'pending';
