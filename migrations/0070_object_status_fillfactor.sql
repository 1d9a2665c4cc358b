-- Status reports rewrite most of a cluster's object rows. With every heap page
-- full (fillfactor 100) each update put the new row version on another page and
-- added a primary-key entry for it; with room left on the page the update is a
-- heap-only tuple (HOT): no index entry, less WAL, and the old version is pruned
-- in place. Applies to pages written from now on (`VACUUM FULL object_status`
-- rewrites existing ones; not needed, they are rewritten as reports arrive).
alter table object_status set (fillfactor = 70);
