"""Output stage: generate, check, snapshots, Sphinx and MyST builds."""
