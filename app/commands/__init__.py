"""Subcommands of `kvwatch`. Each module has NAME, HELP, add_arguments(parser) and run(args) -> int."""
