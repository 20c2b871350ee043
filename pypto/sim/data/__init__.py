"""A timeline's data: each instruction's effect on the memories performed, compiled into steps,
and a rank's launch whose data moves as it goes."""
