"""Built-in profiles (TOML data files)."""
