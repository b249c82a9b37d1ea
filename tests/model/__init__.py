"""Model stage: call resolution, type inference, agreement with a real run."""
