"""The kernel language's names as Python sees them: the objects behind ``pl.*``, what each name
in kernel source denotes, the control words and the op reference."""
