"""``python -m costsim.cli``: the ``costsim`` command."""

from costsim.cli.commands import main

main()
