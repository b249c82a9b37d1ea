"""rlmap's page templates (shipped in the wheel as ``rlmap.templates``)."""
