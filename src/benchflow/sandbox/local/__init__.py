"""The local sandbox backend (Linux namespaces on this machine, no daemon)."""
