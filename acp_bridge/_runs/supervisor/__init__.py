"""The supervisor of detached runs: one process running every run of one environment.

``main`` the process (``python -m acp_bridge._runs.supervisor.main``), light while its runs
are queued; ``running`` its heavy half, running claimed runs several at once until idle;
``entry_call`` one run through its entry (and the follow-ups its held agent takes);
``active_run`` what belongs to one run it runs; ``start_detached`` starting it as a detached
process.
Which supervisor a new run is handed to: :mod:`acp_bridge._runs.store.supervisors`.
"""
