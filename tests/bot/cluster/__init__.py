"""Tests of Redis Cluster alone: ``slack-agent check`` and ``run`` against a cluster, and a
primary's failover. The tests that run both on a single Redis and on a cluster are marked
``cluster`` where they are written (tests/conftest.py, ``pytest_generate_tests``)."""
