"""The command line: output, exit codes, help."""
