"""Batches: many entry requests, one envelope each, in the caller's order
(docs/explanation/batches.md).

A batch runs any entry over many tasks on an *executor*: the local one (this process,
bounded concurrency, the profiles' ``max_concurrent``) or :class:`RayExecutor` (a Ray
cluster whose nodes offer their agents as custom resources). The contract is the bridge's,
whatever the executor: one envelope per task in input order, never an exception for a
task's failure, and never a silent re-run of work that may have had side effects.

Modules:

- :mod:`.tasks` — a task: an :class:`~acp_bridge.EntryRequest` plus a caller's key and a
  workspace; parsing one from JSON;
- :mod:`.workspace` — a task's working directory on the node that runs it (fresh, a copy
  shipped as a bounded tarball, a git checkout) and what the task changed there;
- :mod:`.executor` — what an executor does (:class:`~.executor.Executor`) and the local one;
- :mod:`.batch_run` — :func:`~.batch_run.batch` / ``batch_sync``: order, retries, ``meta.batch``,
  records in the run store (:mod:`.store_records`);
- :mod:`.ray` — the Ray executor: the driver side (:mod:`.ray.ray_executor`,
  :mod:`.ray.attempts`), the task body on a node (:mod:`.ray.node_task`), which node may
  run what (:mod:`.ray.placement`), what a lost or frozen node gives (:mod:`.ray.faults`),
  and joining a cluster as a node that offers its ready agents (:mod:`.ray.worker`);
- :mod:`.results_file` — a resumable JSONL file of envelopes.

Nothing is imported here: Ray is imported only by the Ray modules, and only when a
:class:`~.ray.ray_executor.RayExecutor` connects.
"""

EXECUTORS: dict[str, str] = {
    "local": "acp_bridge._batch.executor:LocalExecutor",
    "ray": "acp_bridge._batch.ray.ray_executor:RayExecutor",
}
"""The executors by name (the command line's ``--executor``): where each class is, loaded
when it is asked for (:func:`~.executor.executor_named`). A new executor is its module and
a row here. Plain strings: the command line's parser reads the names and stays light."""
