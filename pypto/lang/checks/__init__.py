"""The front end's checks over a converted function: write permissions and static bounds (over
the index values each op can reach)."""
