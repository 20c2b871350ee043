"""AutoTileMatmulL0: a matmul whose operands sit in Mat computed in L0-sized pieces — the
design point the chooser picks and the grid the emitter writes."""
