"""Stage 2, model: resolve calls, attributes and tensordict keys into one queryable model (cached whole)."""
