"""When each instruction of a launch starts and ends: the scalar unit's issue (with its
uniform-trip test), the scheduler over the pipes and flags, and the race check on what it
starts."""
