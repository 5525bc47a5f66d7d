"""The web pages (issue 14, docs/web.md): server-rendered Jinja2 views over the API's service calls and typed
answers, a signed session cookie, CSRF-checked forms, security headers."""
