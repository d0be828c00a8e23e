"""The notebook front end: transcript reducer, static rendering, widgets and IPython magics.

It consumes ``silo_nb.sessions`` only through plain models; it never touches JSON-RPC.
"""
