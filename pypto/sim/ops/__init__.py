"""What each op computes, defined once for both platforms (the interpreter and the simulator
call the same functions): the semantics table, its numerics and the cube's arithmetic."""
