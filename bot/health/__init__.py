"""Liveness, readiness and metrics endpoints, in every way the process runs."""
