"""The agentcore sandbox backend."""
