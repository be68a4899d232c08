"""The command-line face: `nodeqc` and its subcommands, one module per command family. main() is
the entry point."""
