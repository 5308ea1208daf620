"""The ``costsim`` command (typer): ``commands.py`` holds the app and registers every command."""

from costsim.cli.commands import app, main

__all__ = ["app", "main"]
