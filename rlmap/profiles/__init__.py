"""Built-in profiles: one folder per documented package (``profile.toml``, its glossary and symptoms)."""
