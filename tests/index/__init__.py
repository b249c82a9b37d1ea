"""Index stage: source discovery, extraction, extensions and the cache."""
