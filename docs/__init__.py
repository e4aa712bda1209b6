"""docs/: the detailed pages behind README.md, and the generated measurements page (`python -m docs.measurements`)."""
