"""Scheduled asks (issue 34): when a schedule runs. ``recurrence.py`` holds a schedule's
recurrence, a cron expression or one moment in an IANA time zone, and what it says about
time: the next runs, the latest one missed, its words; ``cron.py`` is the cron library
behind it, ``errors.py`` the refusal the model relays."""
