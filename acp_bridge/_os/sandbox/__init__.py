"""The OS sandbox around an agent process and the processes it starts
(docs/explanation/security.md, the OS sandbox).

::

    spec = SandboxSpec(cwd=ws, write=(ws,), network=True)        # the policy
    choice = await choose_mode(spec.mode, network=spec.network)   # bwrap / landlock / off + why
    with RunSandbox(spec, choice, tmp_parent=state_dir / "tmp") as box:
        launch = box.wrap(argv, env)          # agent; box.wrap(["/bin/sh", "-c", line], env,
        ...                                   # cwd=…) for each terminal
    meta["sandbox"] = box.meta()

Modules: ``spec`` (policy), ``plan`` (the one path policy both modes share), ``bwrap`` and
``landlock`` + ``landlock_shim`` (the two launchers), ``probe``, ``probe_ahead`` and
``choose`` (which mode, why), ``needed`` (what a command needs to see), ``denials`` (what a
failed agent's stderr says the sandbox hid), ``run_sandbox`` (one run's sandbox).
"""

from acp_bridge._os.sandbox.choose import SandboxChoice, SandboxUnavailable, choose_mode
from acp_bridge._os.sandbox.probe import Probe, probe_modes
from acp_bridge._os.sandbox.run_sandbox import RunSandbox
from acp_bridge._os.sandbox.spec import SandboxSpec

__all__ = [
    "Probe",
    "RunSandbox",
    "SandboxChoice",
    "SandboxSpec",
    "SandboxUnavailable",
    "choose_mode",
    "probe_modes",
]
