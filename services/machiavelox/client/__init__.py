"""`machiavelox play`: the terminal client for people, and the project's reference client.

It talks to the gateway exactly as a mobile app does (docs/protocol.md): `connection.py` (Login,
the agorà, the batched Play stream with resume, heartbeats and resends), `model.py` (the view
built only from the snapshots and events the server sends), `words.py` (events and refusals in
plain words), `keys.py` (every key, for the footer, the help panel and docs/play.md),
`widgets.py` and `screens/` (Textual), `app.py` (the App and the command line). A practice
table is a friendly table whose two bots matchmaking seats, server-side. See docs/play.md.
"""
