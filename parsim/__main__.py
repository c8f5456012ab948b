"""``python -m parsim`` runs the command line."""

from parsim.cli import main

main()
