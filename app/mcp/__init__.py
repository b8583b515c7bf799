"""`kvwatch mcp`: a Model Context Protocol server over a running kvwatch's HTTP API, for coding agents.

Only this package imports the `mcp` SDK (the `kvwatch[mcp]` extra); `shape.py` is pure and imports
no SDK, so `kvwatch status --json` shares its trimming without it. Over stdio (`kvwatch mcp`) the
tools reach kvwatch over HTTP; mounted on the app (`http.py`, at /mcp) they reach the same app in
process, through every middleware a browser's request meets.
"""
