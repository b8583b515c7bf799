"""From lines to stored rows: parse, turn records into samples and events, commit with the offset."""
