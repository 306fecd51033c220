"""The path policy: the deepest rule wins, the command's own needs never unhide a secret,
and both launchers render the same plan."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_bridge._os.fs.paths import real_path
from acp_bridge._os.sandbox.bwrap import bwrap_argv
from acp_bridge._os.sandbox.landlock import READ, fs_rights, landlock_rules
from acp_bridge._os.sandbox.needed import called_links, needed_paths
from acp_bridge._os.sandbox.plan import Access, _below, _depth, _inside, plan_paths
from acp_bridge._os.sandbox.spec import DEFAULT_HIDDEN_SYSTEM, SandboxSpec
from acp_bridge.errors import ConfigError


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for d in ("home/.ssh/keep", "home/.config/gh", "home/.config/other", "ws/.secret", "venv/bin"):
        (tmp_path / d).mkdir(parents=True)
    (tmp_path / "home/.netrc").write_text("x")
    (tmp_path / "venv/bin/agent").write_text("#!/bin/sh\n")
    return tmp_path


def spec_for(tree: Path, **kw: object) -> SandboxSpec:
    base: dict[str, object] = {"cwd": tree / "ws", "write": (tree / "ws",), "home": tree / "home"}
    return SandboxSpec(**{**base, **kw})  # type: ignore[arg-type]


def test_the_deepest_rule_wins(tree: Path) -> None:
    spec = spec_for(
        tree,
        read=(tree / "home", tree / "home/.ssh/keep"),
        hidden=(tree / "ws/.secret",),
    )
    plan = plan_paths(spec)
    assert plan.access_of(tree / "home/.bashrc") is Access.READ  # readable over hidden /tmp
    assert plan.access_of(tree / "home/.ssh/id_rsa") is Access.HIDDEN
    assert plan.access_of(tree / "home/.ssh/keep/pub") is Access.READ  # explicit unhides
    assert plan.access_of(tree / "home/.config/gh/hosts.yml") is Access.HIDDEN
    assert plan.access_of(tree / "ws/src/a.py") is Access.WRITE
    assert plan.access_of(tree / "ws/.secret/token") is Access.HIDDEN  # inside a write root
    if tree.is_relative_to("/tmp"):
        assert plan.access_of(tree / "elsewhere") is Access.HIDDEN  # host /tmp
    assert plan.access_of(Path("/usr/bin/env")) is Access.READ


def test_what_the_command_needs_never_unhides_a_secret(tree: Path) -> None:
    spec = spec_for(tree, read=(tree / "home",))
    needed = needed_paths(
        [str(tree / "venv/bin/agent"), f"--key={tree / 'home/.ssh'}", str(tree / "home/.netrc")],
        {"PATH": os.defpath},
        spec.cwd,
    )
    assert tree / "venv" in needed  # the install prefix of the command under /tmp
    plan = plan_paths(spec, needed=needed)
    assert plan.access_of(tree / "venv/lib/python3/site.py") is Access.READ
    assert plan.access_of(tree / "home/.ssh") is Access.HIDDEN
    assert plan.access_of(tree / "home/.netrc") is Access.HIDDEN
    assert Path(sys.prefix).resolve() in needed


def test_each_plan_hides_the_secrets_there_are_now(tree: Path) -> None:
    # The same spec, planned again for each process of a run: nothing is remembered, so a
    # secret made between two launches is hidden from the second, by its resolved path.
    spec = spec_for(tree, read=(tree / "home",))
    assert plan_paths(spec).access_of(tree / "home/.aws") is Access.READ
    (tree / "home/.aws").mkdir()
    (tree / "keys").mkdir()
    (tree / "home/.kube").symlink_to(tree / "keys")
    (tree / "home/.docker").symlink_to(tree / "nowhere")  # dangling: nothing to hide
    plan = plan_paths(spec)
    assert plan.access_of(tree / "home/.aws") is Access.HIDDEN
    assert plan.access_of(tree / "keys") is Access.HIDDEN
    assert set(spec.secret_paths()) == {
        tree / "home/.ssh",
        tree / "home/.netrc",
        tree / "home/.config/gh",
        tree / "home/.aws",
        tree / "keys",
        *(Path(real_path(p)) for p in DEFAULT_HIDDEN_SYSTEM if os.path.lexists(p)),
    }


def test_redundant_rules_are_dropped(tree: Path) -> None:
    spec = spec_for(tree, read=(tree / "ws/sub", Path("/usr")))
    (tree / "ws/sub").mkdir()
    paths = {rule.path for rule in plan_paths(spec).rules}
    assert tree / "ws/sub" not in paths  # readable inside writable: nothing to do
    assert Path("/usr") not in paths  # readable already


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"mode": "sandboxed"}, "must be one of auto, bwrap, landlock, off"),
        ({"write": ("relative/dir",)}, "path must be absolute"),
        ({"hidden": "/one/path"}, "expected a list of paths"),
    ],
)
def test_bad_specs_are_config_errors(tree: Path, kw: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        spec_for(tree, **kw)


def test_a_missing_write_root_is_a_config_error(tree: Path) -> None:
    with pytest.raises(ConfigError, match="write root does not exist"):
        plan_paths(spec_for(tree, write=(tree / "nope",)))


def symlinks(argv: list[str]) -> list[tuple[str, str]]:
    """The (link, target) pairs of a bwrap command line's ``--symlink`` options."""
    return [(argv[i + 2], argv[i + 1]) for i, arg in enumerate(argv) if arg == "--symlink"]


def test_the_links_on_the_way_to_what_a_command_is_given_are_made_again_in_the_host_tmp(
    tree: Path,
) -> None:
    """``HOME=/tmp/…/home`` → ``real-home`` (issue 33): the plan shows ``real-home``'s
    managed install and state at their resolved paths, and bubblewrap's own ``/tmp`` holds no
    ``home`` unless it is made again there. Only a link in a replaced tmp dir is made, and
    only one that leads somewhere visible: not one inside a secret, not one already visible."""
    assert str(tree).startswith("/tmp/"), "the tree must be under the host's /tmp"
    real = tree / "real-home"
    (real / ".local/share/agents/bin").mkdir(parents=True)
    (real / ".claude").mkdir()
    (tree / "home-link").symlink_to(real)
    (tree / "ws/to-real").symlink_to(real)  # inside a write root: visible as it is
    (tree / "home/.ssh/key-link").symlink_to(tree / "ws")  # inside a secret
    (tree / "nowhere").symlink_to(tree / "venv")  # leads only to what is hidden
    spec = spec_for(tree, write=(tree / "ws", real / ".claude"), home=tree / "home")
    env = {
        "PATH": f"{tree}/home-link/.local/share/agents/bin:/usr/bin",
        "HOME": f"{tree}/home-link",
        "KEY": f"{tree}/home/.ssh/key-link/x",
        "WS": f"{tree}/ws/to-real/.claude",
        "NOWHERE": f"{tree}/nowhere/bin",
    }
    argv = ["true", f"--state={tree}/home-link/.claude"]
    links = called_links(argv, env, tree / "ws")
    assert {link for link, _, _ in links} == {
        f"{tree}/home-link", f"{tree}/ws/to-real", f"{tree}/home/.ssh/key-link",
        f"{tree}/nowhere",
    }  # fmt: skip
    plan = plan_paths(spec, needed=needed_paths(argv, env, tree / "ws"))
    command = bwrap_argv(
        argv, plan=plan, cwd=spec.cwd, network=False, private_tmp=tree / "p", links=links
    )
    assert symlinks(command) == [(f"{tree}/home-link", str(real))]
    # After the plan's mounts (the link goes into bwrap's own /tmp), before any remount.
    at = command.index("--symlink")
    assert command.index("/tmp") < at < command.index("--remount-ro")
    assert called_links(["true"], {"PATH": "/usr/bin"}, tree / "ws") == ()  # no link: no walk


def test_both_launchers_render_the_same_plan(tree: Path) -> None:
    spec = spec_for(tree, read=(tree / "home",))
    plan = plan_paths(spec)
    argv = bwrap_argv(["true"], plan=plan, cwd=spec.cwd, network=False, private_tmp=tree)
    text = " ".join(argv)
    assert f"--bind {tree} /tmp" in text
    assert f"--ro-bind {tree / 'home'} {tree / 'home'}" in text
    assert f"--tmpfs {tree / 'home/.ssh'}" in text
    assert f"--remount-ro {tree / 'home/.ssh'}" in text
    assert f"--ro-bind /dev/null {tree / 'home/.netrc'}" in text
    assert f"--bind {tree / 'ws'} {tree / 'ws'}" in text
    assert "--unshare-net" in argv and "--new-session" not in argv

    rules = landlock_rules(plan, abi=7, network=False, private_tmp=None)
    grants = {path: access for access, path in rules.grants}
    home = tree / "home"
    assert str(home) not in grants  # split: .ssh and .netrc are simply not granted
    assert grants[str(home / ".config/other")] == READ
    assert str(home / ".config/gh") not in grants and str(home / ".ssh") not in grants
    assert grants[str(tree / "ws")] == fs_rights(7)
    assert "/tmp" not in grants and "/" not in grants
    assert rules.handled_net and rules.scoped  # ABI ≥ 4 network, ABI ≥ 6 scopes


# The plan compares paths as strings (fast); pathlib's ancestry is the meaning it keeps.
_names = st.sampled_from(["a", "b", "ab", "a.b", "..", "é", "b a"])
_paths = st.lists(_names, max_size=4).map(lambda parts: Path("/", *parts))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_paths, _paths)
def test_string_ancestry_is_pathlib_ancestry(path: Path, parent: Path) -> None:
    assert _below(str(path), str(parent)) == (parent in path.parents)
    assert _inside(str(path), str(parent)) == (path == parent or parent in path.parents)
    assert _depth(str(path)) == len(path.parts)


# real_path asks the kernel (fast); os.path.realpath's answer is the meaning it keeps, for
# links to folders and files, chains, loops, dangling links, "..", FIFOs and missing paths.
@pytest.fixture(scope="module")
def maze(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("maze")
    (root / "d/e").mkdir(parents=True)
    (root / "d/f").write_text("x")
    os.mkfifo(root / "d/fifo")
    links = {"to_d": "d", "to_f": "d/f", "chain": "to_d", "abs": str(root)}
    links["rel"] = f"../{root.name}/d/e"
    links |= {"dangling": "nowhere/x", "loop_a": "loop_b", "loop_b": "loop_a", "up": ".."}
    for name, target in links.items():
        (root / name).symlink_to(target)
    return root


_steps = st.sampled_from(
    ["d", "e", "f", "fifo", "to_d", "to_f", "chain", "rel", "abs", "dangling", "loop_a", "up"]
)
_odd_steps = st.sampled_from(["..", ".", "", "missing", "gone", "d/e", "to_d/e", "d/f/x"])


@settings(max_examples=300, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_steps | _odd_steps, max_size=4))
def test_real_path_is_os_realpath(maze: Path, steps: list[str]) -> None:
    path = "/".join([str(maze), *steps])
    assert real_path(path) == os.path.realpath(path)
