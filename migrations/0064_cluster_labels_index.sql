-- A scoped reader's fleet read asks for its share of the clusters by label
-- (`labels @> '{"team":"payments"}'`, from the scope's matchLabels): this index
-- answers that without reading the rest of the fleet.
create index clusters_labels_gin on clusters using gin (labels jsonb_path_ops);
