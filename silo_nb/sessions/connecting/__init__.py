"""Opening a session: the connector (``connector.py``: spawn, ``initialize``, sign in, route to new /
resume / load / journal-only / start fresh), the first requests and their wording (``handshake.py``), the
agent's sign-in methods and advice (``auth_methods.py``), and what a failed connect leaves (nothing:
``connect_faults.py``)."""
