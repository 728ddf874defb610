"""The gateway: the only public endpoint; one bidirectional stream per player session."""
