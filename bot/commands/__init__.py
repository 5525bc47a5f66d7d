"""The slash-command groups: ``/leaderboard`` for competitors, ``/admin`` for the admins."""
