"""ConvertTensorToTileOps: tensor-level InCore code computed window by window as loads, tile
ops and stores — its tensor graph, regions, sink plans and emitters, and the rewrites it
runs first."""
