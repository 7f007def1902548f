"""Client campaigns: the shims that drive real client libraries, and their registry."""
