"""Security headers on every response: what a browser may load into, or do with, kvwatch's answers.

- Content-Security-Policy: scripts only from this origin (the page's modules and /vendor/plotly.min.js),
  no inline script or handler; eval is allowed because browser automation evaluates its predicates
  with it (Playwright's `wait_for_function`, used by people who script the dashboard too) and no
  kvwatch code calls it, so it adds no way in for an injected string; styles from this origin and
  inline (plotly.js writes `style` attributes and a <style> element while drawing); images also from
  data:/blob: (plotly's "download plot"); fetch/SSE to this origin only; no plugins, no <base>, and no
  framing (`frame-ancestors 'none'`).
- X-Frame-Options: DENY, for browsers that predate frame-ancestors.
- X-Content-Type-Options: nosniff, so a log line served as text is never run as script or style.
- Referrer-Policy: no-referrer, so a link out of the page never carries a run id or host name.

Set in plain ASGI on `http.response.start`, so streamed answers (SSE, exports) get them too; a header
a route set itself is left alone.
"""

from __future__ import annotations

from kvwatch.app.api.limits import ASGIApp, Message, Receive, Scope, Send

CONTENT_SECURITY_POLICY = "; ".join([
    "default-src 'self'",
    "script-src 'self' 'unsafe-eval'",
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
])
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", ())}
                message["headers"] = [*message.get("headers", ()),
                                      *((n, v) for n, v in SECURITY_HEADERS if n not in present)]
            await send(message)

        await self.app(scope, receive, with_headers)
