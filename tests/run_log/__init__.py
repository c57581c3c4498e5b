"""The run log: write-ahead, kills, imports, live runs, soak."""
