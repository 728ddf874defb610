"""Players' identity, shared by every service that takes a player's token (the gateway, the
matchmaking service): HMAC tokens of the dev login (`tokens`), OIDC ID tokens (`oidc`), and the
verifier a service builds from its settings (`verifier`)."""
