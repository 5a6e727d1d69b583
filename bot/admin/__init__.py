"""The slash command's subcommands: what everyone may ask, and what admins may change."""
