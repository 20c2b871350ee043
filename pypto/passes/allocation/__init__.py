"""Where each tile lives in its memory space: the MemRefs (InitMemRef, InsertAliasCopies),
buffer reuse (MemoryReuse), byte addresses (AllocateMemoryAddr, with the DSA-RP solver) and
the assembler's own placement (PlanPtoasMemory) — the three memory planners and the analyses
they share."""
