"""The table-authority shard: many tables, each a single sequencer around the rules engine."""
