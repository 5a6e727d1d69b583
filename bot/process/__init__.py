"""The composition root: each command's process assembled in one place."""
