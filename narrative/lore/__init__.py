"""Other tools' lore, read and written without a world: the formats of ``narr import`` and ``narr export``.

- :mod:`.sillytavern`: character cards (V1, V2, V3) and World Info books, as JSON, as PNG
  (:mod:`.png`: ``chara`` and ``ccv3`` text chunks) and as CHARX zips;
- :mod:`.obsidian`: a vault's notes (front matter, the body as Markdown, tags) and which folders
  to leave out; :mod:`.wikilinks`: ``[[links]]`` and the note each opens, as Obsidian resolves
  them; :mod:`.vaultnote`: a node as a note (``narr export vault``);
- :mod:`.homecoming`: what SillyTavern changed in a book or card narr exported, as edits;
- :mod:`.codexmd`: narr's own ``narr export codex`` Markdown;
- :mod:`.facets`: the rule that names an entry and joins the entries about one thing into one
  node with sections, so that no text is lost;
- :mod:`.limits`, :mod:`.safeyaml`: bounded JSON and YAML, since every one of these files may come
  from a stranger.

Everything here takes text or bytes and returns :class:`.entry.Entry` objects, or takes node dicts
and returns text or bytes: no file, no repository. The engine (``engine/bible.py`` and
``engine/lorebook.py``) weighs entries against a world and reads the world to export.
"""
