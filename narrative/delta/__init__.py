"""The event pipeline, in memory: what happens to a world between the words and the commit.

This layer sits below both the engine and the diffusers. A diffuser reads the
world through :class:`~narrative.delta.world.World` and proposes a delta; the
pipeline arbitrates it (:mod:`.arbiter`), screens it (:mod:`.screen`) and
applies it to a :class:`~narrative.delta.draft.Draft`, which holds only the nodes
the event touches. Nothing here reads a file, runs git or SQL: the store
implements :class:`World`, and :class:`~narrative.delta.world.DictWorld` lets
every rule be tested on plain dicts.

Imports point down only: model, fields, ids, nodefile and errors.
"""
