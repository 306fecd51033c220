"""The Ray executor (optional extra ``acp-bridge[ray]``): the driver side, one attempt under our
deadlines, the task body on a node, placement, the submission window, faults, and joining a
cluster as a worker. The only place that imports Ray."""
