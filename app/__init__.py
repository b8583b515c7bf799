"""kvwatch's web app, store, pipeline, alerts, compare and controller. The only package that imports
both collectors/ and parsers/."""
