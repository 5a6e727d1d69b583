"""Scheduled asks (issue 34). ``recurrence.py`` holds a schedule's recurrence, a cron
expression or one moment in an IANA time zone, and what it says about time: the next runs,
the latest one missed, its words; ``cron.py`` is the cron library behind it, ``errors.py``
the refusal the model relays. ``config.py`` is the ``schedules:`` section, ``catch_up.py``
what a due schedule runs, ``firing.py`` the protocol that fires each occurrence exactly once
across replicas, ``scheduler.py`` the loop every worker process runs to find those due."""
