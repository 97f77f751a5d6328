"""The apple container sandbox backend."""
