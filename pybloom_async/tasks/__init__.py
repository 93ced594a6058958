"""Running work: event loops and worker threads, the inline mode, bounded concurrency."""
