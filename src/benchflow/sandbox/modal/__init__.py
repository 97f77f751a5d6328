"""The modal sandbox backend."""
