"""``python -m parsim`` runs the command line."""

from parsim.cli.main import main

main()
