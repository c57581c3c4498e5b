"""`python -m steadyloop` runs the command line."""

from steadyloop.cli import entry

entry()
