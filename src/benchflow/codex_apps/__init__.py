"""``--codex-apps-policy``: Codex account Apps off in scored codex-acp trials, unless the run opts in."""
