"""Stage 5, output: build every file in memory, then check it or swap it in whole."""
