"""``python -m toolkeeper`` runs the CLI."""

from toolkeeper.cli.main import main

main()
