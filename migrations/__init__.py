"""Alembic scripts (env.py, versions/, script.py.mako), installed with the project.

A package so that the wheel carries them and `migrations.apply` finds them through the import
system wherever fedgen-lab is installed; `alembic` from the repository root still uses
alembic.ini (script_location = migrations).
"""
