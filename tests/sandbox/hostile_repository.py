"""A hostile agent's own tool against the repository of its worktree run, run inside the
sandbox by the tests (standard library only).

Usage: ``python hostile_repository.py CASE CONFIG_JSON`` in the worktree (its cwd). Each
case is one way to reach the caller's repository from a worktree run, or to trap the
bridge's own git commands, which run outside any sandbox (to measure, keep and remove the
worktree): writes and replacements anywhere under the caller's ``.git``; configuration,
attributes and hooks that run a program when git reads them (each program creates the
``marker`` file, a place the sandbox cannot write: if it exists, something ran outside);
the worktree's ``.git`` replaced, redirected, made a link or a FIFO; links out. Every case
also writes ``work.txt``, so the run has a change to measure. Prints one JSON report line:
each attempt and how it ended.

CONFIG: ``caller_git`` (the caller's git folder), ``caller_top``, ``marker``, ``touch`` (the
absolute path of ``touch``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

CONFIG = json.loads(sys.argv[2]) if __name__ == "__main__" else {}  # imported: its cases
G = Path(CONFIG.get("caller_git", "/nonexistent"))
TOP = Path(CONFIG.get("caller_top", "/nonexistent"))
MARKER = CONFIG.get("marker", "/nonexistent/marker")
RUN = f"{CONFIG.get('touch', 'touch')} {MARKER}"  # the planted program
W = Path.cwd()
HEX = "0123456789abcdef" * 4
report: dict[str, str] = {}


def attempt(name: str, fn: Callable[[], object]) -> None:
    try:
        result = fn()
    except OSError as exc:
        report[name] = f"denied:{exc.errno}"
    except subprocess.CalledProcessError as exc:
        report[name] = f"failed:{exc.returncode}"
    else:
        report[name] = f"ok:{result!r}"[:120]


def write(path: Path | str, text: str = "hostile\n", mode: str = "w") -> int:
    with open(path, mode) as file:
        return file.write(text)


def script(path: Path) -> None:
    write(path, f"#!/bin/sh\n{RUN}\n")
    path.chmod(0o755)


def git(*args: str, cwd: Path = W) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=a", "-c", "user.email=a@a", *args],
        cwd=cwd, capture_output=True, text=True, timeout=30, check=True,
    )  # fmt: skip
    return done.stdout


def branch() -> str:
    return (W / ".git" / "HEAD").read_text().removeprefix("ref: refs/heads/").strip()


CODE_CONFIG = f"""
[core]
\tfsmonitor = {RUN}
\thooksPath = {W}/.hooks
\tpager = {RUN}
\teditor = {RUN}
\taskPass = {RUN}
\tsshCommand = {RUN}
\tgitProxy = {RUN}
\talternateRefsCommand = {RUN}
[filter "evil"]
\tclean = {RUN}; cat
\tsmudge = {RUN}; cat
\tprocess = {RUN}
[diff "evil"]
\tcommand = {RUN}
\ttextconv = {RUN}
[diff]
\texternal = {RUN}
[merge "evil"]
\tdriver = {RUN}
[credential]
\thelper = !{RUN}
[gpg]
\tprogram = {RUN}
[commit]
\tgpgSign = true
[uploadpack]
\tpackObjectsHook = {RUN}
[sequence]
\teditor = {RUN}
[gc]
\tauto = 1
[receive]
\tprocReceiveRefs = refs
[fetch]
\twriteCommitGraph = true
"""
ATTRIBUTES = "* filter=evil diff=evil merge=evil text\n"
HOOKS = (
    "pre-commit", "post-commit", "post-checkout", "post-index-change", "reference-transaction",
    "pre-auto-gc", "post-rewrite", "fsmonitor-watchman", "pre-push", "post-merge",
)  # fmt: skip


# --- the caller's repository, directly ---------------------------------------------------


def caller_git_writes() -> None:
    """Every kind of write to the caller's git folder, and git run against it."""
    attempt("append alternates", lambda: write(G / "objects/info/alternates", "/tmp\n", "a"))
    attempt("ref symlink to hooks", lambda: os.symlink(G / "hooks", G / "refs/heads/evil"))
    attempt("branch folder", lambda: os.mkdir(G / "refs/heads/acp-bridge"))
    attempt("write a ref", lambda: write(G / "refs/heads/main", HEX[:40] + "\n"))
    attempt("packed-refs", lambda: write(G / "packed-refs", f"{HEX[:40]} refs/heads/x\n"))
    attempt("config", lambda: write(G / "config", f"[core]\n\tfsmonitor = {RUN}\n", "a"))
    attempt("config.worktree", lambda: write(G / "config.worktree", CODE_CONFIG))
    attempt("hook", lambda: script(G / "hooks/post-checkout"))
    attempt("hook sample made live", lambda: os.rename(G / "hooks/pre-commit.sample",
                                                        G / "hooks/pre-commit"))  # fmt: skip
    attempt("info/exclude", lambda: write(G / "info/exclude", "*\n"))
    attempt("info/attributes", lambda: write(G / "info/attributes", ATTRIBUTES))
    attempt("HEAD", lambda: write(G / "HEAD", "ref: refs/heads/evil\n"))
    attempt("index", lambda: write(G / "index", "garbage"))
    attempt("truncate index", lambda: os.truncate(G / "index", 0))
    attempt("pack", lambda: write(G / f"objects/pack/pack-{HEX[:40]}.pack", "x"))
    attempt("loose object", lambda: os.mkdir(G / "objects/ff"))
    attempt("worktree entry", lambda: os.makedirs(G / "worktrees/evil"))
    attempt("shallow", lambda: write(G / "shallow", HEX[:40] + "\n"))
    attempt("remove config", lambda: os.unlink(G / "config"))
    attempt("replace config", lambda: os.rename(G / "description", G / "config"))
    attempt("chmod config", lambda: os.chmod(G / "config", 0o666))
    attempt("chmod objects", lambda: os.chmod(G / "objects", 0o777))
    attempt("chmod .git", lambda: os.chmod(G, 0o700 if G.stat().st_mode & 0o077 else 0o755))
    attempt("hard link out", lambda: os.link(G / "config", W / "linked-config"))
    attempt("symlink out", lambda: os.symlink(G, W / "escape"))
    attempt("write through it", lambda: write(W / "escape" / "config", "[core]\n\tbare = true\n"))
    attempt("git commit in caller", lambda: git("commit", "-q", "--allow-empty", "-m", "x",
                                                cwd=TOP))  # fmt: skip
    attempt("git branch in caller", lambda: git("branch", "evil", cwd=TOP))
    attempt("git config in caller", lambda: git("config", "core.fsmonitor", RUN, cwd=TOP))
    attempt("git gc in caller", lambda: git("gc", "-q", cwd=TOP))
    attempt("git worktree add", lambda: git("worktree", "add", "-q", str(W / "wt2"), cwd=TOP))


# --- its own repository, planted for the bridge's git ------------------------------------


def code_in_config() -> None:
    write(W / ".git/config", CODE_CONFIG, "a")
    write(W / ".gitattributes", ATTRIBUTES)
    write(W / ".git/info/attributes", ATTRIBUTES)
    for folder in (W / ".hooks", W / ".git/hooks"):
        folder.mkdir(exist_ok=True)
        for hook in HOOKS:
            script(folder / hook)


def config_includes() -> None:
    write(W / "included", f"[core]\n\tfsmonitor = {RUN}\n[diff]\n\texternal = {RUN}\n")
    include = f'[include]\n\tpath = {W}/included\n[includeIf "gitdir:/"]\n\tpath = {W}/included\n'
    write(W / ".git/config", include, "a")


def worktree_config() -> None:
    write(W / ".git/config", "[extensions]\n\tworktreeConfig = true\n", "a")
    write(W / ".git/config.worktree", CODE_CONFIG)


def core_worktree_redirect() -> None:
    write(W / ".git/config", f"[core]\n\tworktree = {TOP}\n\tbare = false\n", "a")


def commondir_redirect() -> None:
    write(W / ".git/commondir", f"{G}\n")
    write(W / ".git/gitdir", f"{G}\n")


def git_file_to_caller() -> None:
    shutil.rmtree(W / ".git")
    write(W / ".git", f"gitdir: {G}\n")


def git_file_to_caller_worktree() -> None:
    shutil.rmtree(W / ".git")
    write(W / ".git", f"gitdir: {G}/worktrees/evil\n")


def git_symlink_to_caller() -> None:
    shutil.rmtree(W / ".git")
    os.symlink(G, W / ".git")


def git_removed() -> None:
    shutil.rmtree(W / ".git")


def git_of_its_own() -> None:
    """A repository the agent made, in place of the bridge's."""
    shutil.rmtree(W / ".git")
    git("init", "-q", ".")
    write(W / ".git/config", CODE_CONFIG, "a")
    write(W / ".gitattributes", ATTRIBUTES)


def alternates_redirect() -> None:
    git("add", "-A")
    git("commit", "-qm", "before the redirect")
    write(W / ".git/objects/info/alternates", f"/\n/etc\n{G}/objects\n{TOP}\n", "a")


def ref_symlinks() -> None:
    ref = W / ".git/refs/heads" / branch()
    ref.unlink()
    os.symlink(G / "hooks", ref)
    os.symlink("/etc/passwd", W / ".git/refs/heads/passwd")
    (W / ".git/HEAD").unlink()
    os.symlink(G / "HEAD", W / ".git/HEAD")


def packed_refs_garbage() -> None:
    (W / ".git/refs/heads" / branch()).unlink()
    write(W / ".git/packed-refs", "# pack-refs\n" + "x" * (8 << 20) + "\n")


def fifos() -> None:
    for path in (W / ".git/objects/info/alternates", W / ".git/packed-refs", W / "fifo"):
        if path.exists():
            path.unlink()
        os.mkfifo(path)
    (W / ".git/refs/heads" / branch()).unlink()
    os.mkfifo(W / ".git/refs/heads" / branch())


def nested_repositories() -> None:
    for name in ("sub", "sub2", "sub3"):
        (W / name).mkdir()
    git("init", "-q", "sub")
    write(W / "sub/.git/config", CODE_CONFIG, "a")
    write(W / "sub/file.txt")
    write(W / "sub2/.git", f"gitdir: {G}\n")
    os.symlink(G, W / "sub3/.git")


def submodule() -> None:
    write(W / ".gitmodules", '[submodule "x"]\n\tpath = x\n\turl = /dev/null\n')
    (W / ".git/modules/x").mkdir(parents=True)
    write(W / ".git/modules/x/config", CODE_CONFIG)
    git("update-index", "--add", "--cacheinfo", f"160000,{HEX[:40]},x")
    git("commit", "-qm", "a submodule")


def unwritable() -> None:
    (W / "locked/deeper").mkdir(parents=True)
    write(W / "locked/deeper/file.txt")
    (W / "locked/deeper").chmod(0)
    (W / "locked").chmod(0)
    (W / ".git/objects").chmod(0)
    (W / ".git").chmod(0)
    W.chmod(0)  # its worktree itself


def index_redirect() -> None:
    (W / ".git/index").unlink()
    os.symlink(G / "index", W / ".git/index")
    write(W / ".git/shallow", "garbage\n")
    (W / ".git/objects/info/commit-graphs").mkdir()


def commit() -> None:
    write(W / "work.txt")
    git("add", "-A")
    git("commit", "-qm", "the agent's work")


def commit_and_plant() -> None:
    """Commits (kept, when the worktree is), then plants everything in its repository."""
    commit()
    git("gc", "-q")  # its objects packed
    write(W / "more.txt", "uncommitted\n")
    code_in_config()
    config_includes()
    write(W / ".git/objects/info/alternates", f"{G}/objects\n/\n", "a")


CASES: dict[str, Callable[[], None]] = {
    "nothing": lambda: None,
    "commit": commit,
    "caller-git-writes": caller_git_writes,
    "code-in-config": code_in_config,
    "config-includes": config_includes,
    "worktree-config": worktree_config,
    "core-worktree-redirect": core_worktree_redirect,
    "commondir-redirect": commondir_redirect,
    "git-file-to-caller": git_file_to_caller,
    "git-file-to-caller-worktree": git_file_to_caller_worktree,
    "git-symlink-to-caller": git_symlink_to_caller,
    "git-removed": git_removed,
    "git-of-its-own": git_of_its_own,
    "alternates-redirect": alternates_redirect,
    "ref-symlinks": ref_symlinks,
    "packed-refs-garbage": packed_refs_garbage,
    "fifos": fifos,
    "nested-repositories": nested_repositories,
    "submodule": submodule,
    "unwritable": unwritable,
    "index-redirect": index_redirect,
    "commit-and-plant": commit_and_plant,
}


def main() -> None:
    case = sys.argv[1]
    write(W / "work.txt", f"work of {case}\n")
    try:
        CASES[case]()
        report["case"] = "done"
    except (OSError, subprocess.SubprocessError) as exc:  # what it could not do: said so
        report["case"] = f"stopped: {exc}"
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
