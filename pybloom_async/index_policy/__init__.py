"""Which index serves a run: one policy for prune, lookups, datasets, the CLI and Spark."""
