"""Running the cluster on one machine."""
