"""The HTTP surface: a versioned JSON API (``/api/v1``) over the service, health, readiness and metrics.

Same rules as ``bot/``: it calls ``leaderboards/`` only (never the database or ``runners/``), turns each request
into one service call and each answer into JSON. ``kernelcup serve`` (the composition root) builds the service and
the app with ``web.app.create_app``. Pages (Jinja2) are added beside the API later, on the same app.
"""
