"""The orchestration's forms: ``pl.cluster`` and ``pl.split_aiv`` placement, SPMD launches,
scopes, and tasks submitted by hand."""
