"""Bot players: they log in through the gateway, queue in the agorà and play with legal moves."""
