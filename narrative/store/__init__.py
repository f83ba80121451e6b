"""Everything that touches git and the file system: trees, commits, records, refs, locking."""
