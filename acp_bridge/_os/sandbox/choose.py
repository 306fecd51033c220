"""Pick the sandbox mode for a run, and say why (``meta.sandbox``).

``auto`` takes the strongest mode that works here: bubblewrap (mount, PID, IPC namespaces:
everything docs/explanation/security.md describes), else Landlock (files and, with ABI ≥ 4, TCP;
processes kept by the shim), else it refuses with the fix. ``off`` is only ever chosen explicitly. A
mode that was asked for by name and does not work is an error too, never a silent downgrade.

``$ACP_BRIDGE_SANDBOX`` (``bwrap`` | ``landlock``) names the mode ``auto`` stands for on this
machine, where no profile or config file names one: an operator (or CI proving the Landlock
path on a machine where bubblewrap works) chooses for every run without editing each file.
It can never turn the sandbox off: ``off`` is a profile's decision, written down.
"""

from __future__ import annotations

import os
from typing import Literal

from acp_bridge._os.sandbox.probe import Probe, probe_bwrap, probe_landlock
from acp_bridge._os.sandbox.spec import Mode
from acp_bridge._records.frozen import FrozenRecord
from acp_bridge.errors import ConfigError

Chosen = Literal["bwrap", "landlock", "off"]
MODE_ENV = "ACP_BRIDGE_SANDBOX"
OFF_HINT = "or set `sandbox: {mode: off}` in the profile to run the agent unconfined"


class SandboxUnavailable(ConfigError):
    """The sandbox a profile asks for (or ``auto``: any sandbox) cannot run on this machine.
    The message says why and how to fix it."""


class SandboxChoice(FrozenRecord):
    """The sandbox a run gets, and why."""

    # A frozen record, not a frozen dataclass: a dataclass compiles its generated methods
    # from source when its module loads, on every start-up's path (~4 M instructions).
    mode: Chosen
    reason: str
    network: bool
    bwrap: str  # the bwrap binary, in bwrap mode
    abi: int  # the Landlock ABI, in landlock mode
    _compared = __slots__ = ("mode", "reason", "network", "bwrap", "abi")

    def __init__(
        self, mode: Chosen, reason: str, network: bool, bwrap: str = "", abi: int = 0
    ) -> None:
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "reason", reason)
        object.__setattr__(self, "network", network)
        object.__setattr__(self, "bwrap", bwrap)
        object.__setattr__(self, "abi", abi)

    def meta(self) -> dict[str, object]:
        """What goes into ``meta.sandbox``."""
        return {"mode": self.mode, "reason": self.reason, "network": self.network}


def _why_not(probe: Probe) -> str:
    return f"{probe.problem} (fix: {probe.fix})"


def _landlock(probe: Probe, network: bool, reason: str) -> SandboxChoice:
    if not network and probe.abi < 4:
        raise SandboxUnavailable(
            f"sandbox: network off needs bubblewrap or Landlock ABI ≥ 4, this kernel has "
            f"ABI {probe.abi}; {OFF_HINT}"
        )
    return SandboxChoice("landlock", reason, network, abi=probe.abi)


def mode_from_environment() -> tuple[Mode, str]:
    """The mode ``auto`` stands for (``$ACP_BRIDGE_SANDBOX``), and who set it."""
    value = os.environ.get(MODE_ENV, "").strip().lower()
    if value in ("", "auto"):
        return "auto", ""
    if value in ("bwrap", "landlock"):
        return ("bwrap" if value == "bwrap" else "landlock"), f"${MODE_ENV}"
    raise SandboxUnavailable(
        f"{MODE_ENV}={value}: must be auto, bwrap or landlock (off is set in a profile, "
        f"never by the environment)"
    )


async def choose_mode(mode: Mode, *, network: bool = True) -> SandboxChoice:
    """The mode to run with. Raises :class:`SandboxUnavailable` when none fits."""
    setter = "the profile"
    if mode == "auto":
        mode, by_env = mode_from_environment()
        setter = by_env or setter
    if mode == "off":
        return SandboxChoice("off", "sandbox mode off set by the profile: not confined", network)
    if mode == "bwrap":
        bwrap = await probe_bwrap()
        if not bwrap.works:
            raise SandboxUnavailable(
                f"sandbox mode bwrap (set by {setter}): {_why_not(bwrap)}; or set mode "
                f"landlock; {OFF_HINT}"
            )
        return SandboxChoice(
            "bwrap", f"mode bwrap set by {setter}; {bwrap.detail}", network, bwrap=bwrap.path
        )
    if mode == "landlock":
        landlock = await probe_landlock()
        if not landlock.works:
            raise SandboxUnavailable(
                f"sandbox mode landlock (set by {setter}): {_why_not(landlock)}; {OFF_HINT}"
            )
        return _landlock(landlock, network, f"mode landlock set by {setter}; {landlock.detail}")
    bwrap = await probe_bwrap()
    if bwrap.works:
        return SandboxChoice("bwrap", f"auto: {bwrap.detail} works here", network, bwrap=bwrap.path)
    landlock = await probe_landlock()
    if landlock.works:
        return _landlock(
            landlock,
            network,
            f"auto: bubblewrap unusable: {_why_not(bwrap)}; using {landlock.detail}",
        )
    raise SandboxUnavailable(
        f"no OS sandbox works here. bubblewrap: {_why_not(bwrap)}. Landlock: "
        f"{_why_not(landlock)}. {OFF_HINT[0].upper()}{OFF_HINT[1:]}"
    )
