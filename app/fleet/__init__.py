"""The fleet: every host's run in one row, ordered by what needs a person first, and the job's totals."""
