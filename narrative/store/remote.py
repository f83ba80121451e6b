"""Worlds between machines: clone, fetch and push through git's own transport.

Transport runs the ``git`` command, not pygit2's remote API. pygit2 reaches a
server only with credentials handed to it through callbacks: it reads neither
the user's credential helpers nor ``~/.ssh/config``, nor ``url.<base>.insteadOf``
rewrites, proxies or ``GIT_SSH_COMMAND``; ``git`` already does all of that for the
user's other repositories, so a world is reachable exactly where git reaches.
Reading refs and commits afterwards stays with pygit2.

What travels, besides the branches:

- ``refs/narr/{abandoned,edits,adopted,replayed}/*`` are pushed to the same names
  on the remote. Their names start with a time-ordered unique id, so two writers'
  chains and set-aside edits never take each other's name there.
- Fetching brings them into ``refs/narr/remotes/<remote>/<kind>/*``, beside git's
  own ``refs/remotes/<remote>/*``: a fetch never overwrites a ref of one's own, and
  one's own refs that went up and came back are recognised by their name.
- ``refs/narr/remotes/*`` are never pushed: each writer keeps their copies of the
  others'.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from narrative.errors import ConflictError, InvalidInputError, NarrError, NotFoundError
from narrative.store import refs
from narrative.store.libgit import pygit2
from narrative.store.refs import REMOTES
from narrative.store.worldrepo import WorldRepo

KINDS = ("abandoned", "edits", "adopted", "replayed")
"""The kinds of narr refs that travel; ``refs/narr/remotes/`` holds the fetched copies."""


def fetch_refspecs(remote: str) -> list[str]:
    """What ``narr pull`` fetches (and ``narr clone`` configures for plain ``git fetch``)."""
    return [f"+refs/heads/*:refs/remotes/{remote}/*",
            *(f"+refs/narr/{k}/*:{REMOTES}{remote}/{k}/*" for k in KINDS)]


def narr_push_refspecs(*, edits: bool = True) -> list[str]:
    """narr's own refs as they go up. Chains, edits and adopted commits are never rewritten
    once made, so they go without force; a replayed mark moves, so it is forced. Without
    ``edits`` one's set-aside edits stay on this machine."""
    return [*(f"refs/narr/{k}/*:refs/narr/{k}/*" for k in KINDS
              if k != "replayed" and (edits or k != "edits")),
            "+refs/narr/replayed/*:refs/narr/replayed/*"]


PUSH_EDITS = "narr.pushEdits"
"""git config key (this world's ``.git/config``, or ``~/.gitconfig`` for every world):
``false`` keeps set-aside edits off ``narr push`` unless ``--edits`` is given."""


def push_edits_setting(wr: WorldRepo) -> bool:
    cfg = wr.repo.config
    if PUSH_EDITS not in cfg:
        return True
    try:
        return cfg.get_bool(PUSH_EDITS)
    except (pygit2.GitError, ValueError):
        raise InvalidInputError(f"git config {PUSH_EDITS} is {cfg[PUSH_EDITS]!r}, not true or "
                                "false", hint=f"git config {PUSH_EDITS} false") from None


def _git() -> str:
    git = shutil.which("git")
    if git is None:
        raise NarrError("sharing worlds needs the git command, which is not installed here",
                        hint="install git (narr uses it to reach other machines)")
    return git


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    # git never waits for a password nobody may be there to type (a script, an agent),
    # unless the user says otherwise; SSH keys and credential helpers work as ever.
    env = {**os.environ, "GIT_TERMINAL_PROMPT": os.environ.get("GIT_TERMINAL_PROMPT", "0"),
           "LC_ALL": "C"}
    try:
        return subprocess.run([_git(), *args], cwd=cwd, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, env=env, check=False)
    except OSError as exc:
        raise NarrError(f"could not run git: {exc}") from exc


def _failed(what: str, proc: subprocess.CompletedProcess[str]) -> NarrError:
    lines = [ln for ln in proc.stderr.strip().splitlines()
             if ln.strip() and not ln.startswith("hint:")]
    reason = next((ln.removeprefix("fatal: ").removeprefix("error: ") for ln in lines
                   if ln.startswith(("fatal:", "error:"))), lines[-1] if lines else "")
    hint = None
    if "terminal prompts disabled" in proc.stderr:
        hint = ("the server asks for a user name and password: set up a git credential helper "
                "or an SSH key, or let git ask (GIT_TERMINAL_PROMPT=1)")
    return NarrError(f"{what} failed: {reason or f'git exited {proc.returncode}'}",
                     details=[ln for ln in lines if not reason or reason not in ln], hint=hint)


def clone(url: str, target: Path, remote: str = "origin") -> bool:
    """``git clone`` with narr's refs fetched too (and configured for every later fetch);
    False when the repository was empty (nothing to check out)."""
    args = ["clone", "--quiet", "--origin", remote]
    for spec in fetch_refspecs(remote)[1:]:
        args += ["-c", f"remote.{remote}.fetch={spec}"]
    proc = _run([*args, "--", url, str(target)], target.parent)
    if proc.returncode != 0:
        raise _failed(f"cloning {url}", proc)
    return _check_out_a_branch(target, remote)


def remove_clone(target: Path, existed: bool) -> None:
    """Take back a clone that is not to be kept: the directory emptied again when it was
    there before, removed when the clone made it."""
    if existed:
        for child in target.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
    else:
        shutil.rmtree(target, ignore_errors=True)


def _check_out_a_branch(target: Path, remote: str) -> bool:
    """A bare repository made with ``git init --bare`` names a default branch nobody pushed
    (``master`` where the world's is ``main``): git then checks nothing out. Take the
    remote's ``main`` or ``master``, else its first branch by name."""
    repo = pygit2.Repository(str(target))
    if not repo.head_is_unborn:
        return True
    unborn = repo.references["HEAD"].target
    if isinstance(unborn, str):  # git configured it to follow a branch that does not exist
        for key in ("remote", "merge"):
            name = f"branch.{unborn.removeprefix('refs/heads/')}.{key}"
            if name in repo.config:
                del repo.config[name]
    prefix = f"refs/remotes/{remote}/"
    names = sorted(n.removeprefix(prefix) for n in repo.references
                   if n.startswith(prefix) and n != prefix + "HEAD")
    if not names:
        return False  # nothing pushed there yet
    pick = next((n for n in ("main", "master") if n in names), names[0])
    proc = _run(["checkout", "--quiet", "-b", pick, "--track", f"{remote}/{pick}"], target)
    if proc.returncode != 0:
        raise _failed(f"checking out {remote}/{pick}", proc)
    return True


def remote_names(wr: WorldRepo) -> list[str]:
    return sorted(r.name for r in wr.repo.remotes if r.name)


def remote_url(wr: WorldRepo, remote: str) -> str:
    try:
        return wr.repo.remotes[remote].url or ""
    except KeyError:
        raise NotFoundError(f"no remote named {remote!r}", hint=_remotes_hint(wr)) from None


def _remotes_hint(wr: WorldRepo) -> str:
    names = remote_names(wr)
    listed = f"this world has {', '.join(names)}" if names else "this world has none"
    return f"{listed}; git remote add NAME URL adds one"


def upstream(wr: WorldRepo, branch: str) -> tuple[str | None, str | None]:
    """The branch's configured remote and the remote branch it follows, if any."""
    cfg = wr.repo.config
    remote, merge = (_setting(cfg, f"branch.{branch}.{key}") for key in ("remote", "merge"))
    return remote, merge.removeprefix("refs/heads/") if merge else None


def default_remote(wr: WorldRepo, branch: str | None) -> str:
    """The branch's upstream remote, else ``origin``, else the only remote."""
    if branch is not None:
        configured, _ = upstream(wr, branch)
        if configured and configured != ".":
            return configured
    names = remote_names(wr)
    if "origin" in names:
        return "origin"
    if len(names) == 1:
        return names[0]
    raise NotFoundError("which remote? " + ("this world has none" if not names else
                                            f"this world has {', '.join(names)}"),
                        hint="name it (narr push REMOTE), or git remote add origin URL")


def _setting(cfg: pygit2.Config, key: str) -> str | None:
    return str(cfg[key]) if key in cfg else None


def set_upstream(wr: WorldRepo, branch: str, remote: str, remote_branch: str) -> None:
    cfg = wr.repo.config
    cfg[f"branch.{branch}.remote"] = remote
    cfg[f"branch.{branch}.merge"] = f"refs/heads/{remote_branch}"


def tracking_ref(remote: str, branch: str) -> str:
    return f"refs/remotes/{remote}/{branch}"


def remote_branches_named(wr: WorldRepo, branch: str) -> list[str]:
    """The remotes that have a branch ``branch`` (as last fetched), by name."""
    out = []
    for remote in remote_names(wr):
        if tracking_ref(remote, branch) in wr.repo.references:
            out.append(remote)
    return out


def fetch(wr: WorldRepo, remote: str) -> None:
    """Fetch the remote's branches and narr refs into their namespaces, dropping the copies
    of what the remote no longer has."""
    remote_url(wr, remote)
    # --prune: a chain or set-aside edits their writer dropped (and narr push deleted
    # there) go from the copies here too, as branches deleted there do.
    proc = _run(["fetch", "--quiet", "--prune", "--no-write-fetch-head", remote,
                 *fetch_refspecs(remote)], wr.root)
    if proc.returncode != 0:
        raise _failed(f"fetching from {remote}", proc)


@dataclass
class Pushed:
    """What a push did, ref by ref (git's ``--porcelain`` flags)."""

    updated: list[str] = field(default_factory=list)
    up_to_date: list[str] = field(default_factory=list)
    rejected: dict[str, str] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)


def dropped_there(wr: WorldRepo, remote: str) -> tuple[list[str], list[str]]:
    """One's own narr refs dropped here and not yet known gone from ``remote``, and those of
    them it still holds (one ``git ls-remote``, only when there are any)."""
    pending = sorted(n for n, done in refs.dropped(wr).items() if remote not in done)
    if not pending:
        return [], []
    proc = _run(["ls-remote", "--refs", remote, *pending], wr.root)
    if proc.returncode != 0:
        raise _failed(f"asking {remote} for dropped refs", proc)
    held = {line.split("\t", 1)[1] for line in proc.stdout.splitlines() if "\t" in line}
    return pending, [n for n in pending if n in held]


def cleared(wr: WorldRepo, remote: str, names: list[str]) -> None:
    """``names`` are gone from ``remote``: forget its copies here, and a dropped ref once
    every remote has lost it."""
    data = refs.dropped(wr)
    known = set(remote_names(wr))
    for name in names:
        kind_tail = name.removeprefix("refs/narr/")
        copy = f"{REMOTES}{remote}/{kind_tail}"
        if copy in wr.repo.references:
            wr.repo.references.delete(copy)
        if name in data:
            data[name] = sorted(set(data[name]) | {remote})
            if known <= set(data[name]):
                del data[name]
    refs.save_dropped(wr, data)


def push(wr: WorldRepo, remote: str, branch: str, *, edits: bool = True,
         delete: list[str] | None = None) -> Pushed:
    """Push ``branch`` (fast-forward only) and narr's own refs to ``remote``; ``delete``
    names one's own narr refs dropped here, deleted there in the same push.

    A rejected branch raises ConflictError; a narr ref the remote refuses is only
    reported (the story line went up).
    """
    remote_url(wr, remote)
    specs = [f"refs/heads/{branch}:refs/heads/{branch}", *narr_push_refspecs(edits=edits),
             *(f":{name}" for name in delete or [])]
    proc = _run(["push", "--porcelain", remote, *specs], wr.root)
    result = Pushed()
    for line in proc.stdout.splitlines():
        parts = line.split("\t")
        if len(parts) < 3 or len(parts[0]) != 1:
            continue
        flag, spec, summary = parts[0], parts[1], parts[2]
        dst = spec.partition(":")[2]
        if flag == "!":
            result.rejected[dst] = summary
        elif flag == "=":
            result.up_to_date.append(dst)
        elif flag == "-":
            result.deleted.append(dst)
        else:
            result.updated.append(dst)
    head = f"refs/heads/{branch}"
    if head in result.rejected:
        reason = result.rejected[head].removeprefix("[rejected]").strip(" ()")
        raise ConflictError(
            f"{remote} refused {branch} ({reason}): its {branch} has events this story line "
            "does not have; nothing of the story line was sent",
            hint=f"narr pull {remote} {branch} brings them in (a merge), then narr push again")
    if proc.returncode != 0 and not result.rejected:
        raise _failed(f"pushing to {remote}", proc)
    return result
