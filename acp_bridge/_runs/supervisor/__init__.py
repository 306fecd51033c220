"""The supervisor of a detached run, one process per run (DESIGN §10).

``main`` the process (``python -m acp_bridge._runs.supervisor.main.main``), light while queued;
``running`` its heavy half, running claimed runs through the entry functions; ``active_run``
what belongs to one run it runs; ``detach`` starting it as a detached process.
"""
