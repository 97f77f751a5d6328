"""The daytona sandbox backend."""
