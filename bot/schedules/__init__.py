"""Scheduled asks (issue 34): ``config.py`` the ``schedules:`` section, ``firing.py`` the
protocol that fires each occurrence exactly once across replicas, ``scheduler.py`` the loop
every worker process runs to find the occurrences due."""
