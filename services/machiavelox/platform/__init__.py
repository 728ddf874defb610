"""What every service shares: settings, logging, errors, the server lifecycle."""
