"""Agents from an ACP registry, end to end, on this machine only: a registry file and the
packages it names are served by a local HTTP server (127.0.0.1): an npm package (``npm pack``
of a fake ACP agent, behind a one-package npm registry), a wheel (pip installs it from a
local folder) and zip / tar archives. Each agent is the bundled demo agent behind a script.
``agents search`` finds them, ``agents install ID`` installs them as the entry says, and
``run ID`` runs them with no YAML written by anyone."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import json
import shutil
import subprocess
import sys
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_bridge._acp.agent_executable import STAMP
from tests.process.test_agents_cli import run_cli

PLATFORM = {"linux": "linux", "darwin": "darwin"}.get(sys.platform, sys.platform)
MACHINE = {"amd64": "x86_64", "arm64": "aarch64"}
INSTALL = 300  # seconds: a venv and pip, or npm, on a busy machine
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * INSTALL)]  # installs: minutes
AGENT = f"#!/bin/sh\nexec {sys.executable} -m acp_bridge._demo.agent\n"


def this_platform() -> str:
    import platform

    machine = platform.machine().lower()
    return f"{PLATFORM}-{MACHINE.get(machine, machine)}"


class Served:
    """A folder served over HTTP on 127.0.0.1, its files by name."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        handler = _quiet_handler(folder)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Served:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


def _quiet_handler(folder: Path) -> type[http.server.SimpleHTTPRequestHandler]:
    class Handler(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(folder), **kwargs)  # type: ignore[arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def npm_package(work: Path, served: Path, url: str) -> None:
    """``fake-npx-acp@1.0.0``: a package whose one command starts the demo agent, packed by
    npm and described as an npm registry describes it (``GET /fake-npx-acp``)."""
    source = work / "npm-source"
    (source / "bin").mkdir(parents=True)
    (source / "bin" / "agent.sh").write_text(AGENT)
    (source / "bin" / "agent.sh").chmod(0o755)
    meta = {"name": "fake-npx-acp", "version": "1.0.0", "bin": {"fake-npx-acp": "bin/agent.sh"}}
    (source / "package.json").write_text(json.dumps(meta))
    packed = subprocess.run(
        ["npm", "pack", "--pack-destination", str(served), "--silent"],
        cwd=source, capture_output=True, text=True, check=True, timeout=120,
        env={"PATH": "/usr/bin:/bin", "HOME": str(work), "npm_config_cache": str(work / "nc")},
    ).stdout.strip().splitlines()[-1]  # fmt: skip
    tarball = (served / packed).read_bytes()
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    dist = {"tarball": f"{url}/{packed}", "integrity": integrity,
            "shasum": hashlib.sha1(tarball).hexdigest()}  # fmt: skip
    document = {"name": "fake-npx-acp", "dist-tags": {"latest": "1.0.0"},
                "versions": {"1.0.0": {**meta, "dist": dist}}}  # fmt: skip
    (served / "fake-npx-acp").write_text(json.dumps(document))


def wheel(folder: Path) -> None:
    """``fake-uvx-acp 1.0.0``: a wheel whose one script, named as the package (what
    ``uvx`` runs), starts the demo agent."""
    name = "fake_uvx_acp-1.0.0"
    files = {
        f"{name}.data/scripts/fake-uvx-acp": AGENT,
        f"{name}.dist-info/METADATA": "Metadata-Version: 2.1\nName: fake-uvx-acp\nVersion: 1.0.0\n",
        f"{name}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{path},,\n" for path in files) + f"{name}.dist-info/RECORD,,\n"
    with zipfile.ZipFile(folder / f"{name}-py3-none-any.whl", "w") as zipped:
        for path, text in {**files, f"{name}.dist-info/RECORD": record}.items():
            info = zipfile.ZipInfo(path)
            info.external_attr = 0o100755 << 16  # a regular file, runnable
            zipped.writestr(info, text)


def zip_archive(path: Path) -> str:
    """A zip with the agent at dist/fake-bin-acp (runnable: its mode in the zip); its
    sha256."""
    with zipfile.ZipFile(path, "w") as zipped:
        info = zipfile.ZipInfo("dist/fake-bin-acp")
        info.external_attr = 0o100755 << 16  # a regular file, runnable
        zipped.writestr(info, AGENT)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tar_archive(path: Path) -> None:
    with tarfile.open(path, "w:gz") as tarred:
        data = AGENT.encode()
        info = tarfile.TarInfo("fake-tar-acp")
        info.size, info.mode = len(data), 0o755
        tarred.addfile(info, io.BytesIO(data))


def entry(agent_id: str, distribution: dict[str, object]) -> dict[str, object]:
    return {
        "id": agent_id,
        "name": agent_id.title(),
        "version": "1.0.0",
        "description": f"the demo agent as {agent_id}",
        "distribution": distribution,
    }


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, Served]]:
    if shutil.which("npm") is None:
        pytest.skip("npm is not installed")
    folder = tmp_path / "served"
    folder.mkdir()
    with Served(folder) as server:
        npm_package(tmp_path, folder, server.url)
        wheel(folder)
        digest = zip_archive(folder / "fake-bin.zip")
        tar_archive(folder / "fake-tar.tar.gz")
        here = this_platform()
        elsewhere = "windows-aarch64" if here != "windows-aarch64" else "linux-x86_64"
        zipped = {"archive": f"{server.url}/fake-bin.zip", "cmd": "./dist/fake-bin-acp"}
        agents = [
            entry("fake-npx", {"npx": {"package": "fake-npx-acp@1.0.0", "env": {"A": "$x"}}}),
            entry("fake-uvx", {"uvx": {"package": "fake-uvx-acp==1.0.0"}}),
            entry("fake-bin", {"binary": {here: {**zipped, "sha256": digest}}}),
            entry("fake-tar", {"binary": {here: {
                "archive": f"{server.url}/fake-tar.tar.gz", "cmd": "./fake-tar-acp"}}}),
            entry("fake-bad", {"binary": {here: {**zipped, "sha256": "0" * 64}}}),
            entry("fake-elsewhere", {"binary": {elsewhere: zipped}}),
            entry("demo", {"npx": {"package": "fake-npx-acp@1.0.0", "args": ["--x"]}}),
        ]  # fmt: skip
        registry = {"version": "1.0.0", "agents": agents, "extensions": []}
        (folder / "registry.json").write_text(json.dumps(registry))
        yield folder, server


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "home").mkdir()
    (tmp_path / "work").mkdir()
    return tmp_path


def env_for(root: Path, served: Path, server: Served) -> dict[str, str]:
    return {
        "XDG_CACHE_HOME": str(root / "cache"),
        "npm_config_registry": f"{server.url}/",
        "npm_config_cache": str(root / "npm-cache"),
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(served),
    }


def test_search_reads_the_snapshot_until_registry_says_where_from(
    root: Path, served: tuple[Path, Served]
) -> None:
    folder, server = served
    env = env_for(root, folder, server)
    # Nothing is fetched until --registry says where from: the shipped snapshot is read.
    code, out, err = run_cli(root, "agents", "search", "fake", env=env)
    assert code == 0 and out.splitlines()[1:] == [] and "snapshot" in err
    code, out, err = run_cli(
        root, "agents", "search", "demo", "agent", "--registry", f"{server.url}/registry.json",
        "--json", env=env,
    )  # fmt: skip
    assert code == 0, err
    rows = {row["name"]: row for row in json.loads(out)}
    assert {"fake-npx", "fake-uvx", "fake-bin", "fake-tar"} <= set(rows)
    assert rows["fake-bin"]["state"] == "not installed"
    assert rows["fake-npx"]["package"] == "npm:fake-npx-acp"
    assert "no archive for this platform" in rows["fake-elsewhere"]["package"]
    # The cached copy is read from now on, with no server.
    server.server.shutdown()
    code, out, err = run_cli(root, "agents", "list", "--json", env=env)
    assert code == 0 and "fake-uvx" in {row["name"] for row in json.loads(out)}, err


@pytest.mark.parametrize("agent_id", ["fake-npx", "fake-uvx", "fake-bin", "fake-tar"])
def test_an_entry_installs_as_it_says_and_runs_with_no_yaml(
    root: Path, served: tuple[Path, Served], agent_id: str
) -> None:
    folder, server = served
    env = env_for(root, folder, server)
    url = f"{server.url}/registry.json"
    word = agent_id.upper().replace("-", "")
    if agent_id == "fake-tar":  # run --install: the entry installed first, then run
        run_cli(root, "agents", "list", "--registry", url, env=env)
        code, out, err = run_cli(
            root, "run", agent_id, f"Reply with exactly {word}", "--cwd", "work", "--install",
            env=env, timeout=INSTALL,
        )  # fmt: skip
        assert f"{agent_id}: installed: " in out, err
    else:
        code, out, err = run_cli(
            root, "agents", "install", agent_id, "--registry", url, env=env, timeout=INSTALL
        )
        assert code == 0 and out.startswith(f"{agent_id}: installed: "), err
        code, out, err = run_cli(
            root, "run", agent_id, f"Reply with exactly {word}", "--cwd", "work", env=env
        )
    envelope = json.loads(out.splitlines()[-1] if agent_id == "fake-tar" else out)
    assert code == 0 and envelope["output"] == word, (envelope["error"], err)
    code, out, err = run_cli(root, "agents", "list", "--json", env=env)
    assert {r["name"]: r["state"] for r in json.loads(out)}[agent_id] == "installed 1.0.0", err
    code, out, _ = run_cli(root, "agents", "install", agent_id, env=env)
    assert code == 0 and out.startswith(f"{agent_id}: already installed: ")

    data = root / "data" / "acp-bridge" / "agents"
    if agent_id == "fake-npx":
        assert (data / "npm" / "fake-npx-acp@1.0.0" / "package-lock.json").is_file()
        # The entry's environment as it is: a dollar in it is no variable.
        shown = json.loads(run_cli(root, "profiles", "show", agent_id, "--json", env=env)[1])
        assert shown["profile"]["env.A"] == "$x"
    elif agent_id == "fake-uvx":
        lock = data / "pypi" / "fake-uvx-acp@1.0.0" / "requirements.lock"
        assert "fake-uvx-acp==1.0.0" in lock.read_text()
    else:
        stamp = json.loads((data / "binary" / f"{agent_id}@1.0.0" / STAMP).read_text())
        assert len(stamp["sha256"]) == 64
        checked = "checked" if agent_id == "fake-bin" else "not given by the entry: recorded"
        assert stamp["sha256_check"] == checked
    if agent_id == "fake-bin":  # ready: started in its sandbox, as doctor proves it
        code, out, err = run_cli(root, "agents", "list", "--ready", "--json", env=env)
        assert {r["name"]: r["state"] for r in json.loads(out)}[agent_id] == "ready", err


def test_what_the_entry_does_not_say_comes_from_the_built_in_profile(
    root: Path, served: tuple[Path, Served]
) -> None:
    """The registry's ``demo`` over the built-in demo profile: its command and arguments from
    the entry, its sandbox state from the built-in; a name a profile installs its own way
    takes the entry only when asked (``--from-registry``)."""
    folder, server = served
    env = env_for(root, folder, server)
    url = f"{server.url}/registry.json"
    code, _, err = run_cli(root, "agents", "install", "demo", "--registry", url, env=env)
    assert code == 2 and "profile 'demo' names no package" in err
    code, out, err = run_cli(
        root, "agents", "install", "demo", "--from-registry", env=env, timeout=INSTALL
    )
    assert code == 0, err
    shown = json.loads(run_cli(root, "profiles", "show", "demo", "--json", env=env)[1])
    profile, sources = shown["profile"], shown["sources"]
    assert profile["command"] == "fake-npx-acp" and profile["args"] == ["--x"]
    assert sources["command"].startswith("registry ") and "profiles/demo.yaml" in sources["args"]
    assert profile["sandbox.state"][0].endswith("acp-bridge-demo")
    assert sources["sandbox.state"].startswith("built-in ")
    code, out, err = run_cli(root, "run", "demo", "Reply with exactly LAYERED", "--cwd", "work",
                             env=env)  # fmt: skip
    envelope = json.loads(out)
    assert code == 0 and envelope["output"] == "LAYERED", (envelope["error"], err)


def test_an_entry_that_cannot_be_installed_is_refused_with_the_reason(
    root: Path, served: tuple[Path, Served]
) -> None:
    folder, server = served
    env = env_for(root, folder, server)
    url = f"{server.url}/registry.json"
    code, _, err = run_cli(root, "agents", "install", "fake-bad", "--registry", url, env=env)
    assert code != 0 and "not the " + "0" * 64 in err and "refused" in err, err
    assert not (root / "data" / "acp-bridge" / "agents" / "binary" / "fake-bad@1.0.0").exists()
    code, _, err = run_cli(root, "agents", "install", "fake-elsewhere", env=env)
    assert code == 2 and f"has no archive for this platform ({this_platform()})" in err
    code, _, err = run_cli(root, "run", "fake-bad", "hello", "--cwd", "work", env=env)
    assert code != 0 and "fake-bad" in err  # never installed: no profile either


def test_a_bad_registry_names_the_entry_and_keeps_the_cached_copy(
    root: Path, served: tuple[Path, Served]
) -> None:
    folder, server = served
    env = env_for(root, folder, server)
    good = folder / "registry.json"
    code, _, err = run_cli(root, "agents", "list", "--registry", str(good), env=env)
    assert code == 0, err
    bad = json.loads(good.read_text())
    bad["agents"][2]["distribution"]["binary"] = {this_platform(): {"archive": "ftp://x"}}
    (root / "bad.json").write_text(json.dumps(bad))
    code, _, err = run_cli(root, "agents", "list", "--registry", str(root / "bad.json"), env=env)
    assert code == 2
    here = this_platform()
    assert f"agents[2] ('fake-bin'): distribution.binary.{here}.archive:" in err, err
    assert f"distribution.binary.{here}.cmd: Field required" in err, err
    code, out, err = run_cli(root, "agents", "list", "--json", env=env)
    assert code == 0 and "fake-bin" in {row["name"] for row in json.loads(out)}
    code, _, err = run_cli(
        root, "agents", "list", "--registry", f"{server.url}/nosuch.json", env=env
    )
    assert code != 0 and "404" in err
