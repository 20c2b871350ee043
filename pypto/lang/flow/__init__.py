"""Control flow of a kernel body: ``for`` loops and what they carry, ``if`` and its results,
``break``/``continue``, and which names a block assigns and reads."""
