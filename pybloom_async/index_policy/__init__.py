"""One entry point over every index: prune with in-file filters, sidecar or lake indexes."""
