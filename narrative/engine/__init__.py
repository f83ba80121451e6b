"""What narr does: events, reading, checking and time travel, on top of the store."""
