"""Fuzzing: hypothesis strategies for tile programs (``strategies``, ``loops``), tensor-level
code over windows (``windows``), task graphs of an orchestration (``tasks``), split scopes
(``lanes``) and programs with a mistake planted (``bad``); the properties they are checked
against (``properties``); campaigns over them (``campaign``, ``python -m pypto.fuzz``) and
their reproducers (``reproducer``). Drawing needs hypothesis, the ``fuzz`` extra
(``drawing`` says so in one line where it is missing); reading a reproducer does not."""
