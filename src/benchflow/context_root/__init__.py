"""``--context-root``: build monorepo-authored tasks whose Dockerfiles copy from the repository root."""
