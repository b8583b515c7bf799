"""`kvwatch status` and `kvwatch wait`: a running kvwatch read over its HTTP API from a terminal.

Standard library only (urllib), so the commands start fast and need nothing the server needs.
Modules: client (URL and GET), gather (the per-host answers), render (the text block), conditions
(`--until`), screen (`--watch`).
"""
