"""Who touched which bytes, in what order: GM tensors as the bytes they occupy, strided runs,
interval maps over a byte space, happens-before by vector clocks — the structures the
simulator's race checks and the chip's trackers share."""
