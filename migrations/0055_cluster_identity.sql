-- Spokes signing in with their cluster's own identity (issue 52): a cluster registered
-- with an issuer accepts, instead of a cluster token, a JWT of that issuer whose `sub` is
-- exactly identity_subject (`system:serviceaccount:NS:NAME` or a SPIFFE ID). Keys come from
-- the issuer's OIDC discovery, or from identity_jwks when pinned at registration. Such a
-- cluster keeps a token_hash (the column stays not null and unique) of a secret nobody was
-- ever shown, so the cluster-token path cannot open it.
alter table clusters
    add column identity_issuer  text,
    add column identity_subject text,
    add column identity_jwks    jsonb,
    add constraint clusters_identity_whole
        check ((identity_issuer is null) = (identity_subject is null)),
    add constraint clusters_identity_jwks_needs_issuer
        check (identity_jwks is null or identity_issuer is not null);
