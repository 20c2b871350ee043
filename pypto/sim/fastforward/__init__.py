"""Steady loops fast-forwarded: the skipped trips' effects and windows moved on by a step, the
race check across them, and scalars that only move windows sharing one timeline."""
