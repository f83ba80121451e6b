"""Everything that touches git, SQL and the world's files; the engine asks here in its own terms.

What the engine holds of git are this package's own small values
(:mod:`~narrative.store.objects`: a ``Commit`` and a ``Tree``, ids as text), never a
pygit2 object; tests/test_layers.py fails on ``.repo``, a pygit2 name or a file write
anywhere else. By duty:

- the world handle, its lock and journal: ``worldrepo``, ``lock``, ``journal``, ``move``
  (the one way the story moves), ``batch``, ``maintenance`` (gc), ``failures`` (a full
  disk or a damaged object, named), ``environment`` (the git and SQLite narr needs,
  checked before a world is opened), ``server_record`` (what a running server left for
  readers);
- history: ``history`` (revisions, the first-parent chain, what a reset undoes),
  ``records`` (event records in commit messages), ``commit`` (the one seal of every
  event, the genesis too), ``trees`` (trees built in memory), ``snapshots`` (the world
  as a commit holds it);
- refs: ``refs`` (narr's own: abandoned chains, set-aside edits), ``branches``,
  ``remote``, ``mergestate``;
- the working tree: ``worktree`` (finding hand edits), ``nodefiles`` (the one node
  writer), ``view`` (the world an event reads), ``create`` (a new world), ``watch``;
- files outside the world: ``outfiles`` (an export's files and folders, whole, never over
  the user's changes);
- the derived catalog: ``catalog`` (typed rows, one ``atomic()``), ``completion``.
"""
