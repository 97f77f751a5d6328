"""The docker sandbox backend (also remote-docker, podman and docker+runsc)."""
