"""A tuning campaign: a declared plan of flag sets that kvwatch carries out on one host, step by step.

model (the plan, its steps, the campaign as a store document), settings (`[hosts.campaign]` and a
request's plan), planner (every candidate predicted and checked before any restart), measure (a step's
steady-state numbers), runner (one campaign's state machine over the controller), service (one runner
a host, the store, a person's restart), table (the final table and its price sentences).
"""
