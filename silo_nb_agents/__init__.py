"""Agents that ship with silo_nb, each a program started with ``python -m`` and importing nothing of
``silo_nb`` (a spawn loads only its own modules): ``silo_nb_agents.demo``, the scripted demo agent.

The replay agent stays ``silo_nb.replay_agent``: it reads journals through silo_nb's one reader
(``silo_nb.updates``), where a copy of its own would be a second reader of the format to keep in step.
"""
